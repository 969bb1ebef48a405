// rdc-peer: the controller-runtime operator the bench sets side by side with ours
// (bench/README.md, "Side by side with controller-runtime").
//
// It does the reconcile of the operator guide (/work/shared/seed, "Controller 实现") the
// way a kubebuilder user writes it: finalizer, ConfigMap, headless Service, StatefulSet
// with controllerutil.CreateOrUpdate, status with a Ready condition, Events through
// client-go's recorder (the manager's EventRecorder), requeue after 10 s until Ready.
// It works on the same RedisCluster CRD (cache.example.com/v1) but only in the
// namespace given with --namespace: the bench runs it in a namespace of its own, and our
// operator (started with --namespace on another one) never sees its objects, nor it ours.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

const finalizer = "cache.example.com/finalizer"

// ---- the API types (the guide's v1alpha1 shape, served here as v1) ----

type RedisConfig struct {
	Maxmemory       string `json:"maxmemory,omitempty"`
	MaxmemoryPolicy string `json:"maxmemoryPolicy,omitempty"`
}

type StorageSpec struct {
	Size         string `json:"size,omitempty"`
	StorageClass string `json:"storageClass,omitempty"`
}

type RedisClusterSpec struct {
	Size    int32       `json:"size"`
	Image   string      `json:"image"`
	Version string      `json:"version,omitempty"`
	Config  RedisConfig `json:"config,omitempty"`
	Storage StorageSpec `json:"storage,omitempty"`
	// The v1 schema's mode: the peer plans no replication, but its Update of the
	// finalizer sends the whole object, so a field missing here would be dropped and
	// defaulted back (a Standalone cluster would turn into Replication, generation 2).
	Mode string `json:"mode,omitempty"`
}

type RedisClusterStatus struct {
	Phase              string             `json:"phase,omitempty"`
	Replicas           int32              `json:"replicas,omitempty"`
	ReadyReplicas      int32              `json:"readyReplicas,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

type RedisCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RedisClusterSpec   `json:"spec,omitempty"`
	Status            RedisClusterStatus `json:"status,omitempty"`
}

type RedisClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RedisCluster `json:"items"`
}

// What controller-gen would write.
func (in *RedisCluster) DeepCopyInto(out *RedisCluster) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = in.Spec
	out.Status = in.Status
	if in.Status.Conditions != nil {
		out.Status.Conditions = make([]metav1.Condition, len(in.Status.Conditions))
		for i := range in.Status.Conditions {
			in.Status.Conditions[i].DeepCopyInto(&out.Status.Conditions[i])
		}
	}
}

func (in *RedisCluster) DeepCopy() *RedisCluster {
	if in == nil {
		return nil
	}
	out := new(RedisCluster)
	in.DeepCopyInto(out)
	return out
}

func (in *RedisCluster) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *RedisClusterList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := new(RedisClusterList)
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]RedisCluster, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

var groupVersion = schema.GroupVersion{Group: "cache.example.com", Version: "v1"}

// ---- the reconciler ----

type Reconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder record.EventRecorder
}

func labelsFor(rc *RedisCluster) map[string]string {
	return map[string]string{"app": rc.Name, "rdc-peer": "1"}
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rc := &RedisCluster{}
	if err := r.Get(ctx, req.NamespacedName, rc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !rc.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(rc, finalizer) {
			controllerutil.RemoveFinalizer(rc, finalizer)
			return ctrl.Result{}, client.IgnoreNotFound(r.Update(ctx, rc))
		}
		return ctrl.Result{}, nil
	}
	if !controllerutil.ContainsFinalizer(rc, finalizer) {
		controllerutil.AddFinalizer(rc, finalizer)
		if err := r.Update(ctx, rc); err != nil {
			return ctrl.Result{}, err
		}
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: rc.Name, Namespace: rc.Namespace}}
	if err := r.ensure(ctx, rc, cm, func() error {
		cm.Labels = labelsFor(rc)
		cm.Data = map[string]string{"redis.conf": fmt.Sprintf(
			"maxmemory %s\nmaxmemory-policy %s\nappendonly yes\ndir /data\n",
			rc.Spec.Config.Maxmemory, rc.Spec.Config.MaxmemoryPolicy)}
		return controllerutil.SetControllerReference(rc, cm, r.Scheme)
	}); err != nil {
		return ctrl.Result{RequeueAfter: 10 * time.Second}, err
	}

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: rc.Name, Namespace: rc.Namespace}}
	if err := r.ensure(ctx, rc, svc, func() error {
		svc.Labels = labelsFor(rc)
		svc.Spec.ClusterIP = corev1.ClusterIPNone
		svc.Spec.Selector = labelsFor(rc)
		svc.Spec.Ports = []corev1.ServicePort{{Name: "redis", Port: 6379,
			Protocol: corev1.ProtocolTCP}}
		if len(svc.Spec.Ports) == 1 {
			svc.Spec.Ports[0].TargetPort.IntVal = 6379
		}
		return controllerutil.SetControllerReference(rc, svc, r.Scheme)
	}); err != nil {
		return ctrl.Result{RequeueAfter: 10 * time.Second}, err
	}

	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: rc.Name, Namespace: rc.Namespace}}
	if err := r.ensure(ctx, rc, sts, func() error { return r.mutateStatefulSet(rc, sts) }); err != nil {
		return ctrl.Result{RequeueAfter: 10 * time.Second}, err
	}

	ready := sts.Spec.Replicas != nil && sts.Status.ReadyReplicas == *sts.Spec.Replicas
	if err := r.updateStatus(ctx, rc, sts, ready); err != nil {
		return ctrl.Result{RequeueAfter: 10 * time.Second}, err
	}
	if !ready {
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// ensure is the guide's CreateOrUpdate (controllerutil's: read from the cache, mutate,
// write only when something changed) with a Created Event per child, as ours records.
func (r *Reconciler) ensure(ctx context.Context, rc *RedisCluster, obj client.Object, mutate func() error) error {
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, mutate)
	if err != nil {
		return err
	}
	if op == controllerutil.OperationResultCreated {
		kind := fmt.Sprintf("%T", obj)[1:]
		r.Recorder.Eventf(rc, corev1.EventTypeNormal, "Created", "Created %s %s", kind, obj.GetName())
	}
	return nil
}

// The guide's buildStatefulSet, applied field by field over what the cache holds so that
// the API server's defaults do not read as a difference on every reconcile.
func (r *Reconciler) mutateStatefulSet(rc *RedisCluster, sts *appsv1.StatefulSet) error {
	replicas := rc.Spec.Size
	sts.Labels = labelsFor(rc)
	sts.Spec.Replicas = &replicas
	if sts.CreationTimestamp.IsZero() {
		sts.Spec.ServiceName = rc.Name
		sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: labelsFor(rc)}
		sc := rc.Spec.Storage.StorageClass
		size := rc.Spec.Storage.Size
		if size == "" {
			size = "1Gi"
		}
		pvc := corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse(size)}},
			},
		}
		if sc != "" {
			pvc.Spec.StorageClassName = &sc
		}
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{pvc}
	}
	sts.Spec.Template.Labels = labelsFor(rc)
	image := fmt.Sprintf("%s:%s", rc.Spec.Image, rc.Spec.Version)
	if len(sts.Spec.Template.Spec.Containers) != 1 {
		sts.Spec.Template.Spec.Containers = []corev1.Container{{Name: "redis"}}
	}
	c := &sts.Spec.Template.Spec.Containers[0]
	c.Name = "redis"
	c.Image = image
	c.Command = []string{"redis-server", "/etc/redis/redis.conf"}
	c.Ports = []corev1.ContainerPort{{ContainerPort: 6379, Name: "redis", Protocol: corev1.ProtocolTCP}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"},
		{Name: "config", MountPath: "/etc/redis"}}
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("256Mi")},
		Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"),
			corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	if c.LivenessProbe == nil {
		c.LivenessProbe = &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
				Command: []string{"redis-cli", "ping"}}},
			InitialDelaySeconds: 10, PeriodSeconds: 10,
		}
	}
	if len(sts.Spec.Template.Spec.Volumes) != 1 {
		sts.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{}}}}
	}
	v := &sts.Spec.Template.Spec.Volumes[0]
	v.Name = "config"
	if v.ConfigMap == nil {
		v.VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}
	}
	v.ConfigMap.Name = rc.Name
	return controllerutil.SetControllerReference(rc, sts, r.Scheme)
}

// The guide's updateStatus, written only when it changes (a resync writes nothing).
func (r *Reconciler) updateStatus(ctx context.Context, rc *RedisCluster, sts *appsv1.StatefulSet, ready bool) error {
	want := rc.Status.DeepCopyStatus()
	want.Replicas = sts.Status.Replicas
	want.ReadyReplicas = sts.Status.ReadyReplicas
	want.ObservedGeneration = rc.Generation
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ReplicasNotReady",
		Message: "waiting for pods to be ready", ObservedGeneration: rc.Generation}
	want.Phase = "Pending"
	if ready {
		want.Phase = "Running"
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "AllReplicasReady", "All replicas are ready"
	}
	setCondition(&want.Conditions, cond)
	if statusEqual(&rc.Status, want) {
		return nil
	}
	rc.Status = *want
	return r.Status().Update(ctx, rc)
}

func (s *RedisClusterStatus) DeepCopyStatus() *RedisClusterStatus {
	out := *s
	out.Conditions = append([]metav1.Condition(nil), s.Conditions...)
	return &out
}

func setCondition(conds *[]metav1.Condition, c metav1.Condition) {
	for i := range *conds {
		if (*conds)[i].Type == c.Type {
			if (*conds)[i].Status != c.Status {
				c.LastTransitionTime = metav1.Now()
			} else {
				c.LastTransitionTime = (*conds)[i].LastTransitionTime
			}
			(*conds)[i] = c
			return
		}
	}
	c.LastTransitionTime = metav1.Now()
	*conds = append(*conds, c)
}

func statusEqual(a, b *RedisClusterStatus) bool {
	if a.Phase != b.Phase || a.Replicas != b.Replicas || a.ReadyReplicas != b.ReadyReplicas ||
		a.ObservedGeneration != b.ObservedGeneration || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

func main() {
	var ns, metricsAddr, probeAddr, limiter string
	var workers, burst int
	var qps float64
	var syncPeriod time.Duration
	flag.StringVar(&ns, "namespace", "", "the only namespace reconciled and cached (required)")
	flag.StringVar(&metricsAddr, "metrics-bind-address", "127.0.0.1:0", "metrics endpoint")
	flag.StringVar(&probeAddr, "health-probe-bind-address", "0", "health probes (0: off)")
	flag.IntVar(&workers, "workers", 2, "MaxConcurrentReconciles")
	flag.Float64Var(&qps, "kube-api-qps", 20, "client-side QPS (-1: no limit)")
	flag.IntVar(&burst, "kube-api-burst", 30, "client-side burst")
	// controller-runtime's client makes one REST client per kind, each with a token
	// bucket of the config's QPS and burst unless the config carries a RateLimiter:
	// "per-kind" is that default; "shared" gives the manager's client one bucket for all
	// kinds and the Events a recorder of their own with another (the budget ours has,
	// docs/kube-api-budget.md).
	flag.StringVar(&limiter, "rate-limiter", "per-kind", "per-kind (controller-runtime's default) or shared")
	flag.DurationVar(&syncPeriod, "sync-period", 10*time.Hour, "the informers' resync period (cache.Options.SyncPeriod)")
	opts := zap.Options{Development: false}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	if ns == "" {
		fmt.Fprintln(os.Stderr, "rdc-peer: --namespace is required")
		os.Exit(2)
	}
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS = float32(qps)
	cfg.Burst = burst
	var events *kubernetes.Clientset
	if limiter == "shared" && qps > 0 {
		evCfg := rest.CopyConfig(cfg)
		evCfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(float32(qps), burst)
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(float32(qps), burst)
		var err error
		if events, err = kubernetes.NewForConfig(evCfg); err != nil {
			fmt.Fprintln(os.Stderr, "rdc-peer: events client:", err)
			os.Exit(1)
		}
	} else if limiter != "per-kind" && limiter != "shared" {
		fmt.Fprintln(os.Stderr, "rdc-peer: --rate-limiter must be per-kind or shared")
		os.Exit(2)
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	scheme.AddKnownTypes(groupVersion, &RedisCluster{}, &RedisClusterList{})
	metav1.AddToGroupVersion(scheme, groupVersion)

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}},
			SyncPeriod: &syncPeriod},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "rdc-peer: manager:", err)
		os.Exit(1)
	}
	// Ready once the caches are synced, as the bench waits for before it creates.
	if err := mgr.AddReadyzCheck("cache", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("caches not synced")
		}
		return nil
	}); err != nil {
		fmt.Fprintln(os.Stderr, "rdc-peer: readyz:", err)
		os.Exit(1)
	}
	r := &Reconciler{Client: mgr.GetClient(), Scheme: scheme,
		Recorder: mgr.GetEventRecorderFor("rdc-peer")}
	if events != nil {
		// the manager's recorder, but on a client (and bucket) of its own
		bc := record.NewBroadcaster()
		bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.CoreV1().Events("")})
		r.Recorder = bc.NewRecorder(scheme, corev1.EventSource{Component: "rdc-peer"})
	}
	err = ctrl.NewControllerManagedBy(mgr).
		For(&RedisCluster{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rdc-peer: controller:", err)
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintln(os.Stderr, "rdc-peer:", err)
		os.Exit(1)
	}
}
