"""Objects beside the backend's, whichever backend runs the pods: the pipeline's render step adds
what each add-on returns for a JobPlan, and no backend knows them.

    monitoring   PodMonitor, alert rules and the dashboard's ConfigMap (when the profile turns
                 monitoring on)
    dashboard    the job's Grafana dashboard, as JSON
    tensorboard  a TensorBoard Deployment and Service reading the job's model directory

They import concerns/, inputs/ and shared/ only, never backends/ (docs/design.md, "Layers").
This face imports nothing, to keep the KRM cold start lean.
"""
