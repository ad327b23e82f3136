// The Kubeflow training-operator v1 (TFJob), as a local process of a tfjobgen cluster.
//
// Upstream's cmd/training-operator.v1/main.go, with the controllers, webhooks and gang-scheduling
// setup of the pinned module unchanged, and three differences that an out-of-cluster process needs
// (upstream's main offers no flag for any of them):
//   - the webhook server listens on --webhook-host (127.0.0.1), not on every interface;
//   - it reads its certificate from --webhook-cert-dir, not the machine-wide
//     /tmp/k8s-webhook-server/serving-certs that every controller-runtime program shares;
//   - no cert rotator: upstream's (open-policy-agent/cert-controller) writes a Secret in
//     $MY_POD_NAMESPACE, then waits for the kubelet to mount it as files, which never happens out
//     of cluster, and holds the controllers back until then; its certificate names
//     training-operator.<ns>.svc, which the API server cannot call on 127.0.0.1 anyway. The cluster
//     issues the certificate and registers the webhook by URL instead.
//
// Copyright 2021 The Kubeflow Authors, Apache License 2.0 (the parts taken from upstream's main).
package main

import (
	"errors"
	"flag"
	"net/http"
	"os"
	"strings"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	schedulerpluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	"volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	volcanoclient "volcano.sh/apis/pkg/client/clientset/versioned"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	controllerv1 "github.com/kubeflow/training-operator/pkg/controller.v1"
	"github.com/kubeflow/training-operator/pkg/controller.v1/common"
	"github.com/kubeflow/training-operator/pkg/webhooks"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kubeflowv1.AddToScheme(scheme))
	utilruntime.Must(v1beta1.AddToScheme(scheme))
	utilruntime.Must(schedulerpluginsv1alpha1.AddToScheme(scheme))
}

func main() {
	var metricsAddr, probeAddr, leaderElectionID, gangSchedulerName, namespace string
	var webhookHost, webhookCertDir string
	var enableLeaderElection bool
	var enabledSchemes controllerv1.EnabledSchemes
	var controllerThreads, webhookServerPort, clientQps, clientBurst int

	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "The address the metric endpoint binds to.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.BoolVar(&enableLeaderElection, "leader-elect", false, "Enable leader election for controller manager.")
	flag.StringVar(&leaderElectionID, "leader-election-id", "1ca428e5.training-operator.kubeflow.org", "The ID for leader election.")
	flag.Var(&enabledSchemes, "enable-scheme", "Enable scheme(s) as --enable-scheme=tfjob --enable-scheme=pytorchjob, case insensitive.")
	flag.StringVar(&gangSchedulerName, "gang-scheduler-name", "", "volcano, or the name of a scheduler-plugins scheduler.")
	flag.StringVar(&namespace, "namespace", os.Getenv("KUBEFLOW_NAMESPACE"), "The namespace to monitor kubeflow jobs (all when unset).")
	flag.IntVar(&controllerThreads, "controller-threads", 1, "Number of worker threads used by the controller.")
	flag.IntVar(&clientQps, "kube-api-qps", 20, "QPS indicates the maximum QPS to the master from this client.")
	flag.IntVar(&clientBurst, "kube-api-burst", 30, "Maximum burst for throttle.")
	flag.IntVar(&webhookServerPort, "webhook-server-port", 9443, "Endpoint port for the webhook server.")
	flag.StringVar(&webhookHost, "webhook-host", "127.0.0.1", "The address the webhook server listens on.")
	flag.StringVar(&webhookCertDir, "webhook-cert-dir", "", "The folder with the webhook server's tls.crt and tls.key.")

	opts := zap.Options{Development: true, StacktraceLevel: zapcore.DPanicLevel}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	if webhookCertDir == "" {
		setupLog.Error(errors.New("--webhook-cert-dir is required"), "no certificate for the webhook server")
		os.Exit(2)
	}

	var cacheOpts cache.Options
	if namespace != "" {
		cacheOpts = cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}}
	}
	cfg := ctrl.GetConfigOrDie()
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(float32(clientQps), clientBurst)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		WebhookServer:          webhook.NewServer(webhook.Options{Host: webhookHost, Port: webhookServerPort, CertDir: webhookCertDir}),
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         enableLeaderElection,
		LeaderElectionID:       leaderElectionID,
		Cache:                  cacheOpts,
	})
	if err != nil {
		setupLog.Error(err, "unable to start manager")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up health check")
		os.Exit(1)
	}
	// Ready once the webhook server listens, as upstream's (which also waits for its cert rotator).
	if err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		return mgr.GetWebhookServer().StartedChecker()(req)
	}); err != nil {
		setupLog.Error(err, "unable to set up ready check")
		os.Exit(1)
	}
	setupControllers(mgr, enabledSchemes, gangSchedulerName, controllerThreads)

	setupLog.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
}

// setupControllers is upstream's, less the wait for the cert rotator.
func setupControllers(mgr ctrl.Manager, enabledSchemes controllerv1.EnabledSchemes, gangSchedulerName string, controllerThreads int) {
	gangSchedulingSetupFunc := common.GenNonGangSchedulerSetupFunc()
	if strings.EqualFold(gangSchedulerName, string(common.GangSchedulerVolcano)) {
		gangSchedulingSetupFunc = common.GenVolcanoSetupFunc(volcanoclient.NewForConfigOrDie(mgr.GetConfig()))
		validateCRD(mgr, v1beta1.SchemeGroupVersion.WithKind("PodGroup"))
	} else if gangSchedulerName != "" {
		gangSchedulingSetupFunc = common.GenSchedulerPluginsSetupFunc(mgr.GetClient(), gangSchedulerName)
		validateCRD(mgr, schedulerpluginsv1alpha1.SchemeGroupVersion.WithKind("PodGroup"))
	}
	if enabledSchemes.Empty() {
		enabledSchemes.FillAll()
	}
	for _, s := range enabledSchemes {
		setupReconcilerFunc, ok := controllerv1.SupportedSchemeReconciler[s]
		if !ok {
			setupLog.Error(errors.New("failed to set up controllers"), "scheme is not supported", "scheme", s)
			os.Exit(1)
		}
		if err := setupReconcilerFunc(mgr, gangSchedulingSetupFunc, controllerThreads); err != nil {
			setupLog.Error(err, "unable to create controller", "scheme", s)
			os.Exit(1)
		}
		setupWebhookFunc, ok := webhooks.SupportedSchemeWebhook[s]
		if !ok {
			setupLog.Error(errors.New("failed to set up controllers"), "scheme is not supported", "scheme", s)
			os.Exit(1)
		}
		if err := setupWebhookFunc(mgr); err != nil {
			setupLog.Error(err, "unable to start webhook server", "scheme", s)
			os.Exit(1)
		}
	}
}

func validateCRD(mgr ctrl.Manager, gvk schema.GroupVersionKind) {
	if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			setupLog.Error(err, "crd might be missing, please install crd", "apiVersion", gvk.GroupVersion().String(), "kind", gvk.Kind)
		} else {
			setupLog.Error(err, "unable to get crd", "apiVersion", gvk.GroupVersion().String(), "kind", gvk.Kind)
		}
		os.Exit(1)
	}
}
