"""tfjobgen: TrainingJob intents to Kubernetes objects for TensorFlow parameter-server training."""

__version__ = "0.1.0"
