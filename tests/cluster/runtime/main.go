// rdc-pod-runtime: the data plane of the local test control plane (tests/cluster).
//
// It is the kubelet of a few "process nodes": it registers them (labelled and tainted so
// that only pods which ask for them land there), keeps their status and Lease fresh, and
// runs the containers of every pod bound to them as local processes listening on the
// pod's IP (a loopback address). See tests/cluster/README.md, "Process nodes".
//
// Test infrastructure only: it trusts the cluster it is pointed at, runs as the user that
// started it, and isolates nothing (no namespaces, cgroups or limits).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type config struct {
	kubeconfig     string
	nodes          []string
	stateDir       string
	maxPods        int
	podCIDR        string
	kubeletPort    int
	apiserverHost  string
	apiserverPort  string
	kwokCRDs       bool
	operatorBinDir string
}

// Runtime holds what all pod workers share.
type Runtime struct {
	cfg  config
	cs   kubernetes.Interface
	dyn  dynamic.Interface
	ctx  context.Context
	ips  *ipAllocator
	bins map[string]string // program name -> absolute path on this machine (outside wrapperDir)

	mu       sync.Mutex
	workers  map[types.UID]*podWorker
	admitted map[types.UID]bool
	lost     map[string]bool
	wg       sync.WaitGroup
}

func (rt *Runtime) podsDir() string    { return filepath.Join(rt.cfg.stateDir, "pods") }
func (rt *Runtime) pidsDir() string    { return filepath.Join(rt.cfg.stateDir, "pids") }
func (rt *Runtime) pvDir() string      { return filepath.Join(rt.cfg.stateDir, "pv") }
func (rt *Runtime) wrapperDir() string { return filepath.Join(rt.cfg.stateDir, "bin") }
func (rt *Runtime) lostDir() string    { return filepath.Join(rt.cfg.stateDir, "lost") }

func main() {
	if len(os.Args) > 1 && os.Args[1] == "__mount-exec" {
		mountExecMain(os.Args[2:]) // the helper of mount-namespaced containers (mountns.go)
		return
	}
	var cfg config
	var nodes string
	flag.StringVar(&cfg.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	flag.StringVar(&nodes, "nodes", "proc-node-0", "comma-separated names of the process nodes to register and run")
	flag.StringVar(&cfg.stateDir, "state-dir", "", "directory for pods, volumes, logs and PID files (required)")
	flag.IntVar(&cfg.maxPods, "max-pods", 30, "maximum number of admitted (running) pods over all process nodes")
	flag.StringVar(&cfg.podCIDR, "pod-cidr", "127.10.0.0/16", "pod IPs are taken from the top of this loopback range")
	flag.IntVar(&cfg.kubeletPort, "kubelet-port", 0, "port written as the nodes' kubelet endpoint (kwok's server, for logs/exec)")
	flag.StringVar(&cfg.apiserverHost, "apiserver-host", "127.0.0.1", "KUBERNETES_SERVICE_HOST given to containers")
	flag.StringVar(&cfg.apiserverPort, "apiserver-port", "", "KUBERNETES_SERVICE_PORT given to containers")
	flag.BoolVar(&cfg.kwokCRDs, "kwok-crds", true, "create kwok Logs/Exec objects for each pod (kubectl logs/exec)")
	flag.StringVar(&cfg.operatorBinDir, "operator-bin-dir", "", "the built operator (supervisor, ...): the image rediscluster-operator* runs it")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds | log.LUTC)
	if cfg.stateDir == "" {
		log.Fatal("--state-dir is required")
	}
	for _, n := range strings.Split(nodes, ",") {
		if n = strings.TrimSpace(n); n != "" {
			cfg.nodes = append(cfg.nodes, n)
		}
	}
	setOperatorBinDir(cfg.operatorBinDir)
	if err := run(cfg); err != nil {
		log.Fatal(err)
	}
}

func run(cfg config) error {
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = 50, 100
	rc.UserAgent = "rdc-pod-runtime"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	ips, err := newIPAllocator(cfg.podCIDR)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := &Runtime{cfg: cfg, cs: cs, dyn: dyn, ctx: ctx, ips: ips,
		workers: map[types.UID]*podWorker{}, admitted: map[types.UID]bool{}, lost: map[string]bool{}}
	for _, d := range []string{rt.podsDir(), rt.pidsDir(), rt.pvDir(), rt.wrapperDir(), rt.lostDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	sweepPidFiles(rt.pidsDir())
	if err := rt.writeWrappers(); err != nil {
		return err
	}

	for _, n := range cfg.nodes {
		go rt.nodeLoop(n)
	}
	go rt.lostLoop()

	factories := []informers.SharedInformerFactory{}
	for _, n := range cfg.nodes {
		sel := fields.OneTermEqualSelector("spec.nodeName", n).String()
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = sel }))
		inf := f.Core().V1().Pods().Informer()
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o interface{}) { rt.dispatch(o) },
			UpdateFunc: func(_, o interface{}) { rt.dispatch(o) },
			DeleteFunc: func(o interface{}) { rt.dispatchDelete(o) },
		})
		factories = append(factories, f)
	}
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	log.Printf("runtime up: nodes=%v max-pods=%d pod-cidr=%s state=%s", cfg.nodes, cfg.maxPods, cfg.podCIDR, cfg.stateDir)

	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	s := <-sig
	log.Printf("%v: stopping every container (TERM, 3 s, KILL)", s)
	rt.shutdown()
	cancel()
	return nil
}

// dispatch hands the newest version of a pod to its worker, starting one if needed.
func (rt *Runtime) dispatch(o interface{}) {
	pod, ok := o.(*v1.Pod)
	if !ok {
		return
	}
	rt.mu.Lock()
	w := rt.workers[pod.UID]
	if w == nil {
		w = newPodWorker(rt, pod)
		rt.workers[pod.UID] = w
		rt.wg.Add(1)
		go func() {
			defer rt.wg.Done()
			w.run()
		}()
	}
	rt.mu.Unlock()
	w.update(pod, false)
}

func (rt *Runtime) dispatchDelete(o interface{}) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	pod, ok := o.(*v1.Pod)
	if !ok {
		return
	}
	rt.mu.Lock()
	w := rt.workers[pod.UID]
	rt.mu.Unlock()
	if w != nil {
		w.update(pod, true)
	}
}

func (rt *Runtime) forget(uid types.UID) {
	rt.mu.Lock()
	delete(rt.workers, uid)
	delete(rt.admitted, uid)
	rt.mu.Unlock()
	rt.ips.release(string(uid))
}

// admit says whether the pod may run: at most cfg.maxPods pods are admitted at once.
func (rt *Runtime) admit(uid types.UID) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.admitted[uid] {
		return true
	}
	if len(rt.admitted) >= rt.cfg.maxPods {
		return false
	}
	rt.admitted[uid] = true
	return true
}

func (rt *Runtime) unadmit(uid types.UID) {
	rt.mu.Lock()
	delete(rt.admitted, uid)
	rt.mu.Unlock()
}

func (rt *Runtime) isLost(node string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.lost[node]
}

// lostLoop follows <state>/lost/<node>: `cluster.sh node-lose NODE` creates the file
// (the machine "dies": heartbeats stop, its processes are killed), node-restore removes it.
func (rt *Runtime) lostLoop() {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-rt.ctx.Done():
			return
		case <-t.C:
		}
		for _, n := range rt.cfg.nodes {
			_, err := os.Stat(filepath.Join(rt.lostDir(), n))
			now := err == nil
			rt.mu.Lock()
			was := rt.lost[n]
			rt.lost[n] = now
			var ws []*podWorker
			if was != now {
				for _, w := range rt.workers {
					ws = append(ws, w)
				}
			}
			rt.mu.Unlock()
			if was != now {
				log.Printf("node %s: lost=%v", n, now)
				for _, w := range ws {
					w.poke()
				}
			}
		}
	}
}

// shutdown stops every container of every worker: TERM to each process group, then KILL
// after 3 s. No API writes: the cluster is going down.
func (rt *Runtime) shutdown() {
	rt.mu.Lock()
	var ws []*podWorker
	for _, w := range rt.workers {
		ws = append(ws, w)
	}
	rt.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range ws {
		for _, c := range w.containerList() {
			wg.Add(1)
			go func(c *container) {
				defer wg.Done()
				c.stop(3*time.Second, nil)
			}(c)
		}
	}
	wg.Wait()
	sweepPidFiles(rt.pidsDir())
}
