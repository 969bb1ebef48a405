package main

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const volumeRefresh = 30 * time.Second

// podWorker is the kubelet's pod worker for one pod UID: one goroutine that syncs the
// pod's processes with its spec and writes its status, woken by updates, process exits,
// probe changes and a 1 s tick.
type podWorker struct {
	rt       *Runtime
	uid      types.UID
	ns, name string

	mu   sync.Mutex
	pod   *v1.Pod
	gone  bool
	inits []*container // spec.initContainers, run one after another before ctrs
	ctrs  []*container
	wake  chan struct{}

	// owned by the run goroutine
	dir          string
	ip           string
	setUp        bool
	hostOf       map[string]string
	tokens       map[string]tokenInfo
	lastRefresh  time.Time
	waitReason   string
	waitMsg      string
	lastWritten  *v1.PodStatus
	startTime    metav1.Time
	kwokDone     bool
	wasLost      bool
	terminalDone bool
	initDone     bool // every init container has completed: ctrs may run
}

func newPodWorker(rt *Runtime, pod *v1.Pod) *podWorker {
	return &podWorker{rt: rt, uid: pod.UID, ns: pod.Namespace, name: pod.Name, pod: pod,
		wake: make(chan struct{}, 1), tokens: map[string]tokenInfo{},
		dir: filepath.Join(rt.podsDir(), string(pod.UID))}
}

func (w *podWorker) logf(format string, args ...interface{}) {
	log.Printf("pod %s/%s: %s", w.ns, w.name, fmt.Sprintf(format, args...))
}

func (w *podWorker) update(pod *v1.Pod, gone bool) {
	w.mu.Lock()
	w.pod = pod
	if gone {
		w.gone = true
	}
	w.mu.Unlock()
	w.poke()
}

func (w *podWorker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// containerList is every container of the pod, init containers first.
func (w *podWorker) containerList() []*container {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append(append([]*container(nil), w.inits...), w.ctrs...)
}

// mainList is the pod's spec.containers.
func (w *podWorker) mainList() []*container {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*container(nil), w.ctrs...)
}

func (w *podWorker) run() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-w.rt.ctx.Done():
			return
		case <-w.wake:
		case <-t.C:
		}
		if w.sync() {
			w.rt.forget(w.uid)
			return
		}
	}
}

// sync does one round; true when the pod is finished and the worker can go.
func (w *podWorker) sync() bool {
	w.mu.Lock()
	pod, gone := w.pod, w.gone
	w.mu.Unlock()

	if w.rt.isLost(pod.Spec.NodeName) {
		// the machine is "dead": its processes die with it and nobody reports anything
		if !w.wasLost {
			w.logf("node %s lost: killing the pod's processes", pod.Spec.NodeName)
		}
		w.wasLost = true
		for _, c := range w.containerList() {
			c.kill()
		}
		return false
	}
	if w.wasLost {
		w.wasLost = false
		w.lastWritten = nil
	}
	if gone {
		// deleted from the API without us (force delete): stop what runs and forget it
		w.stopAll(pod, false)
		w.cleanup()
		return true
	}
	if pod.DeletionTimestamp != nil {
		w.terminate(pod)
		return true
	}
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		if !w.terminalDone {
			w.stopAll(pod, false)
			w.rt.unadmit(w.uid)
			w.terminalDone = true
		}
		return false
	}
	if !w.rt.admit(w.uid) {
		w.waitReason = "MaxPodsExceeded"
		w.waitMsg = fmt.Sprintf("the process runtime already runs its maximum of %d pods (RDC_RUNTIME_MAX_PODS); "+
			"this pod starts when another one ends", w.rt.cfg.maxPods)
		w.writeStatus(pod)
		return false
	}
	if !w.setUp {
		if err := w.setup(pod); err != nil {
			w.waitReason, w.waitMsg = "ContainerCreating", err.Error()
			w.writeStatus(pod)
			return false
		}
		w.waitReason, w.waitMsg = "", ""
	}
	if time.Since(w.lastRefresh) >= volumeRefresh {
		w.refreshAtomicVolumes(pod)
		w.lastRefresh = time.Now()
	}
	if w.syncInits(pod) {
		for _, c := range w.mainList() {
			w.syncContainer(pod, c, pod.Spec.RestartPolicy)
		}
	}
	if !w.kwokDone && w.rt.cfg.kwokCRDs {
		if err := w.ensureKwokObjects(pod); err != nil {
			w.logf("kwok Logs/Exec: %v", err)
		}
	}
	w.writeStatus(pod)
	return false
}

func (w *podWorker) setup(pod *v1.Pod) error {
	for _, ic := range pod.Spec.InitContainers {
		if ic.RestartPolicy != nil {
			return fmt.Errorf("init container %s: sidecar containers (restartPolicy) are not supported by the process runtime", ic.Name)
		}
	}
	if err := os.MkdirAll(filepath.Join(w.dir, "logs"), 0o755); err != nil {
		return err
	}
	if w.ip == "" {
		ip, err := w.rt.ips.get(string(w.uid), pod.Status.PodIP)
		if err != nil {
			return err
		}
		w.ip = ip
	}
	hostOf, err := w.setupVolumes(pod)
	if err != nil {
		return err
	}
	w.hostOf = hostOf
	w.lastRefresh = time.Now()
	inits := w.newContainers(pod.Spec.InitContainers, pod.Status.InitContainerStatuses)
	ctrs := w.newContainers(pod.Spec.Containers, pod.Status.ContainerStatuses)
	w.mu.Lock()
	w.inits, w.ctrs = inits, ctrs
	w.mu.Unlock()
	if pod.Status.StartTime != nil {
		w.startTime = *pod.Status.StartTime
	} else {
		w.startTime = mt(time.Now())
	}
	w.setUp = true
	return nil
}

// newContainers makes the containers of specs, each keeping the restartCount of its old
// status (the runtime restarted: keep counting).
func (w *podWorker) newContainers(specs []v1.Container, statuses []v1.ContainerStatus) []*container {
	old := map[string]v1.ContainerStatus{}
	for _, cs := range statuses {
		old[cs.Name] = cs
	}
	var ctrs []*container
	for _, cs := range specs {
		c := &container{w: w, spec: cs}
		if o, ok := old[cs.Name]; ok && o.RestartCount > 0 {
			c.restartCount = o.RestartCount
		}
		ctrs = append(ctrs, c)
	}
	return ctrs
}

func (w *podWorker) grace(pod *v1.Pod) time.Duration {
	if pod.DeletionGracePeriodSeconds != nil {
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	return time.Duration(ptr.Deref(pod.Spec.TerminationGracePeriodSeconds, 30)) * time.Second
}

// syncContainer starts c when it is not running and policy says it runs (again), after
// its crash-loop back-off; a running container whose liveness failed is stopped.
func (w *podWorker) syncContainer(pod *v1.Pod, c *container, policy v1.RestartPolicy) {
	c.mu.Lock()
	if c.running {
		if c.liveFailed != "" && !c.stopping {
			c.stopping = true
			grace := w.grace(pod)
			c.mu.Unlock()
			go c.stop(grace, nil)
			return
		}
		c.mu.Unlock()
		return
	}
	now := time.Now()
	c.handleExit(now)
	restart := !c.everRan
	if c.everRan && c.last != nil {
		switch policy {
		case v1.RestartPolicyNever:
		case v1.RestartPolicyOnFailure:
			restart = c.last.ExitCode != 0
		default:
			restart = true
		}
	}
	if !restart {
		c.waitReason, c.waitMsg = "", ""
		c.mu.Unlock()
		return
	}
	if now.Before(c.nextStart) {
		c.waitReason = "CrashLoopBackOff"
		c.waitMsg = fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
			c.backoff, c.spec.Name, pod.Name, pod.Namespace, pod.UID)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()

	rule, err := lookupImage(c.spec.Image)
	if err != nil {
		c.setWaiting("ErrImagePull", err.Error())
		return
	}
	argv, env, dir, ns, err := w.buildCommand(pod, c, rule)
	if err != nil {
		c.setWaiting("CreateContainerConfigError", err.Error())
		return
	}
	if err := c.start(argv, env, dir, ns); err != nil {
		// as a runtime that cannot exec the entrypoint: terminated with StartError, backoff
		c.mu.Lock()
		if c.everRan {
			c.restartCount++
		}
		c.everRan, c.exitHandled = true, false
		c.prev, c.last = c.last, &v1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError",
			Message: err.Error(), StartedAt: mt(now), FinishedAt: mt(now)}
		c.handleExit(now)
		c.waitReason = "CrashLoopBackOff"
		c.waitMsg = fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
			c.backoff, c.spec.Name, pod.Name, pod.Namespace, pod.UID)
		c.mu.Unlock()
		w.logf("container %s: start: %v", c.spec.Name, err)
	}
}

// mountsOf is the container's path translation table.
func (w *podWorker) mountsOf(spec *v1.Container) mountMap {
	var es []mountEntry
	for _, m := range spec.VolumeMounts {
		h, ok := w.hostOf[m.Name]
		if !ok {
			continue
		}
		if m.SubPath != "" {
			h = filepath.Join(h, m.SubPath)
			_ = os.MkdirAll(h, 0o777)
		}
		es = append(es, mountEntry{ctrPath: m.MountPath, hostPath: h})
	}
	if p := spec.TerminationMessagePath; p != "" {
		// termination.go: the run's file stands for the path in arguments and env
		es = append(es, mountEntry{ctrPath: p, hostPath: w.termPath(spec.Name)})
	}
	if r, err := lookupImage(spec.Image); err == nil {
		for cp, hp := range r.imageDirs {
			es = append(es, mountEntry{ctrPath: cp, hostPath: hp})
		}
	}
	return newMountMap(es)
}

func imageDirMap(r *imageRule) mountMap {
	var es []mountEntry
	for cp, hp := range r.imageDirs {
		es = append(es, mountEntry{ctrPath: cp, hostPath: hp})
	}
	return newMountMap(es)
}

// buildCommand resolves the image, command/args (with $(VAR) expansion), env and working
// dir of a container, paths translated through its volume mounts.
func (w *podWorker) buildCommand(pod *v1.Pod, c *container, rule *imageRule) ([]string, []string, string, *nsSpec, error) {
	envKV, err := w.containerEnv(pod, &c.spec, !rule.mountNS)
	if err != nil {
		return nil, nil, "", nil, err
	}
	vals := map[string]string{}
	env := make([]string, 0, len(envKV))
	for _, kv := range envKV {
		vals[kv[0]] = kv[1]
	}
	for _, kv := range envKV {
		env = append(env, kv[0]+"="+kv[1])
	}
	lookup := func(n string) (string, bool) { v, ok := vals[n]; return v, ok }
	var argv []string
	switch {
	case len(c.spec.Command) > 0:
		argv = append(append(argv, c.spec.Command...), c.spec.Args...)
	case len(c.spec.Args) > 0 && strings.HasPrefix(c.spec.Args[0], "-"):
		argv = append(append(argv, rule.defaultCmd[0]), c.spec.Args...) // like docker-entrypoint.sh
	case len(c.spec.Args) > 0:
		argv = append(argv, c.spec.Args...)
	default:
		argv = append(argv, rule.defaultCmd...)
	}
	mounts := w.mountsOf(&c.spec)
	for i := range argv {
		a := expandVars(argv[i], lookup)
		switch {
		case !rule.mountNS:
			a = mounts.translateArg(a)
		case i == 0:
			a = imageDirMap(rule).translate(a) // the image's own programs
		}
		argv[i] = bindArg(a, w.ip)
	}
	prog, err := resolveProgram(argv[0], envPath(env))
	if err != nil {
		return nil, nil, "", nil, err
	}
	argv[0] = prog
	if filepath.Base(prog) == "redis-server" {
		if argv, err = redisCommand(argv, mounts, w.ip, filepath.Join(w.dir, "rootfs"),
			filepath.Join(w.dir, c.spec.Name+".redis.conf")); err != nil {
			return nil, nil, "", nil, err
		}
	}
	wd := c.spec.WorkingDir
	if wd == "" {
		wd = rule.workDir
	}
	if rule.mountNS {
		ns := &nsSpec{Dir: wd, Hostname: pod.Name}
		for _, m := range c.spec.VolumeMounts {
			h, ok := w.hostOf[m.Name]
			if !ok {
				continue
			}
			if m.SubPath != "" {
				h = filepath.Join(h, m.SubPath)
			}
			ns.Mounts = append(ns.Mounts, nsMount{Src: h, Dst: m.MountPath})
		}
		if p := c.spec.TerminationMessagePath; p != "" {
			if why := termMountProblem(p); why != "" {
				return nil, nil, "", nil, fmt.Errorf("%s", why)
			}
			ns.Mounts = append(ns.Mounts, nsMount{Src: c.termPath(), Dst: p})
		}
		return argv, env, "/", ns, nil
	}
	dir := mounts.translate(wd)
	if dir == wd && wd != "/" {
		// not a mount: a directory of the pod's own stands in for the image's
		dir = filepath.Join(w.dir, "rootfs", wd)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, "", nil, err
		}
	}
	return argv, env, dir, nil, nil
}

// redisPathDirectives are the redis.conf directives whose argument is a path.
var redisPathDirectives = map[string]bool{"dir": true, "include": true, "logfile": true, "pidfile": true,
	"unixsocket": true, "aclfile": true, "tls-cert-file": true, "tls-key-file": true, "tls-ca-cert-file": true,
	"tls-ca-cert-dir": true, "tls-dh-params-file": true, "tls-client-cert-file": true, "tls-client-key-file": true}

// redisCommand adapts a redis-server command line: Redis listens on the pod IP only and
// stays in the foreground, and a config file is replaced by a copy (confCopy) in which
// the paths of path directives are translated through the mounts (Redis changes into `dir`
// while it reads the file, so the path must exist on this machine); a path that is not
// a mount becomes a directory under rootfs (the pod's stand-in for the image's files).
func redisCommand(argv []string, mounts mountMap, ip, rootfs, confCopy string) ([]string, error) {
	out := append([]string(nil), argv...)
	hostPath := func(p string) string {
		t := mounts.translate(p)
		if t == p && strings.HasPrefix(p, "/") {
			t = filepath.Join(rootfs, p)
		}
		return t
	}
	if len(out) > 1 && !strings.HasPrefix(out[1], "-") {
		b, err := os.ReadFile(out[1])
		if err != nil {
			return nil, fmt.Errorf("redis config file: %v", err)
		}
		var conf strings.Builder
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			fs := strings.Fields(line)
			if len(fs) == 2 && redisPathDirectives[strings.ToLower(fs[0])] {
				p := strings.Trim(fs[1], `"'`)
				if strings.HasPrefix(p, "/") {
					t := hostPath(p)
					if strings.EqualFold(fs[0], "dir") {
						if err := os.MkdirAll(t, 0o755); err != nil {
							return nil, err
						}
					}
					line = fs[0] + " " + strconvQuote(t)
				}
			}
			conf.WriteString(line + "\n")
		}
		if err := os.WriteFile(confCopy, []byte(conf.String()), 0o644); err != nil {
			return nil, err
		}
		out[1] = confCopy
	}
	// --dir was translated with the other arguments; a path that is neither a mount nor
	// on this machine goes under rootfs
	for i := 1; i+1 < len(out); i++ {
		if out[i] == "--dir" && strings.HasPrefix(out[i+1], "/") {
			if _, err := os.Stat(out[i+1]); err != nil {
				out[i+1] = hostPath(out[i+1])
				_ = os.MkdirAll(out[i+1], 0o755)
			}
		}
	}
	return append(out, "--bind", ip, "--daemonize", "no"), nil
}

// strconvQuote quotes a path for redis.conf when it has spaces.
func strconvQuote(p string) string {
	if strings.ContainsAny(p, " \t\"'") {
		return `"` + strings.ReplaceAll(p, `"`, `\"`) + `"`
	}
	return p
}

// containerEnv is the environment as the kubelet builds it: service variables for the
// apiserver, envFrom, then env (later wins); plus the runtime's own PATH, HOSTNAME, HOME
// and RDC_POD_IP/RDC_POD_DIR.
func (w *podWorker) containerEnv(pod *v1.Pod, c *v1.Container, translate bool) ([][2]string, error) {
	var out [][2]string
	idx := map[string]int{}
	set := func(k, v string) {
		if i, ok := idx[k]; ok {
			out[i][1] = v
			return
		}
		idx[k] = len(out)
		out = append(out, [2]string{k, v})
	}
	set("PATH", w.rt.wrapperDir()+":"+defaultPath)
	set("HOSTNAME", pod.Name)
	home := filepath.Join(w.dir, "home")
	_ = os.MkdirAll(home, 0o755)
	set("HOME", home)
	if p := w.rt.cfg.apiserverPort; p != "" {
		h := w.rt.cfg.apiserverHost
		set("KUBERNETES_SERVICE_HOST", h)
		set("KUBERNETES_SERVICE_PORT", p)
		set("KUBERNETES_SERVICE_PORT_HTTPS", p)
		set("KUBERNETES_PORT", "tcp://"+h+":"+p)
		set("KUBERNETES_PORT_443_TCP", "tcp://"+h+":"+p)
	}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil && ef.SecretRef == nil {
			continue
		}
		secret, name, optional := ef.ConfigMapRef == nil, "", (*bool)(nil) // ConfigMapRef first, as before
		if secret {
			name, optional = ef.SecretRef.Name, ef.SecretRef.Optional
		} else {
			name, optional = ef.ConfigMapRef.Name, ef.ConfigMapRef.Optional
		}
		o, err := w.getKeyed(secret, pod.Namespace, name, optional)
		if err != nil {
			return nil, err
		}
		if o == nil {
			continue
		}
		for k, v := range o.text {
			set(ef.Prefix+k, v)
		}
		if secret {
			for k, v := range o.bin {
				set(ef.Prefix+k, string(v))
			}
		}
	}
	mounts := w.mountsOf(c)
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil {
			var err error
			v, err = w.envFrom(pod, c, e.ValueFrom)
			if err != nil {
				return nil, fmt.Errorf("env %s: %v", e.Name, err)
			}
		} else {
			v = expandVars(v, func(n string) (string, bool) {
				if i, ok := idx[n]; ok {
					return out[i][1], true
				}
				return "", false
			})
		}
		if translate {
			v = mounts.translate(v)
		}
		set(e.Name, v)
	}
	set("RDC_POD_IP", w.ip)
	set("RDC_POD_DIR", w.dir)
	return out, nil
}

func (w *podWorker) envFrom(pod *v1.Pod, c *v1.Container, src *v1.EnvVarSource) (string, error) {
	switch {
	case src.FieldRef != nil:
		return w.fieldValue(pod, src.FieldRef.FieldPath)
	case src.ConfigMapKeyRef != nil:
		r := src.ConfigMapKeyRef
		return w.envKey(false, pod.Namespace, r.Name, r.Key, r.Optional)
	case src.SecretKeyRef != nil:
		r := src.SecretKeyRef
		return w.envKey(true, pod.Namespace, r.Name, r.Key, r.Optional)
	case src.ResourceFieldRef != nil:
		q, ok := c.Resources.Limits[v1.ResourceName(strings.TrimPrefix(src.ResourceFieldRef.Resource, "limits."))]
		if !ok {
			q, ok = c.Resources.Requests[v1.ResourceName(strings.TrimPrefix(src.ResourceFieldRef.Resource, "requests."))]
		}
		if !ok {
			return "0", nil
		}
		return q.String(), nil
	}
	return "", fmt.Errorf("unsupported valueFrom")
}

// envKey is an env var's value from key of the Secret (secret: its data) or ConfigMap (its
// data, not binaryData) ns/name; empty when the object or the key is missing and optional.
func (w *podWorker) envKey(secret bool, ns, name, key string, optional *bool) (string, error) {
	o, err := w.getKeyed(secret, ns, name, optional)
	if o == nil || err != nil {
		return "", err
	}
	kind, v, ok := "ConfigMap", "", false
	if secret {
		var b []byte
		b, ok = o.bin[key]
		kind, v = "Secret", string(b)
	} else {
		v, ok = o.text[key]
	}
	if !ok && !ptr.Deref(optional, false) {
		return "", fmt.Errorf("couldn't find key %s in %s %s/%s", key, kind, ns, name)
	}
	return v, nil
}

func (w *podWorker) fieldValue(pod *v1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return "127.0.0.1", nil
	case "status.podIP", "status.podIPs":
		return w.ip, nil
	}
	for _, m := range []struct {
		prefix string
		src    map[string]string
	}{{"metadata.labels", pod.Labels}, {"metadata.annotations", pod.Annotations}} {
		if path == m.prefix {
			var b strings.Builder
			for k, v := range m.src {
				fmt.Fprintf(&b, "%s=%q\n", k, v)
			}
			return b.String(), nil
		}
		if strings.HasPrefix(path, m.prefix+"['") && strings.HasSuffix(path, "']") {
			return m.src[path[len(m.prefix)+2:len(path)-2]], nil
		}
	}
	return "", fmt.Errorf("fieldRef %q is not supported", path)
}

// stopAll stops every running container within the pod's grace period, with preStop
// hooks when withHooks.
func (w *podWorker) stopAll(pod *v1.Pod, withHooks bool) {
	grace := w.grace(pod)
	var wg sync.WaitGroup
	for _, c := range w.containerList() {
		wg.Add(1)
		go func(c *container) {
			defer wg.Done()
			var hook func(time.Time)
			if withHooks && c.spec.Lifecycle != nil && c.spec.Lifecycle.PreStop != nil {
				hook = func(deadline time.Time) { w.runPreStop(c, c.spec.Lifecycle.PreStop, deadline) }
			}
			c.stop(grace, hook)
		}(c)
	}
	wg.Wait()
}

func (w *podWorker) runPreStop(c *container, h *v1.LifecycleHandler, deadline time.Time) {
	left := time.Until(deadline)
	if left <= 0 {
		return
	}
	switch {
	case h.Exec != nil:
		out, err := w.execInContainer(w.rt.ctx, c, h.Exec.Command, left)
		w.logf("container %s: preStop %v: err=%v %s", c.spec.Name, h.Exec.Command, err, strings.TrimSpace(string(out)))
	case h.Sleep != nil:
		d := time.Duration(h.Sleep.Seconds) * time.Second
		if d > left {
			d = left
		}
		time.Sleep(d)
	default:
		w.logf("container %s: preStop handler not supported by the process runtime", c.spec.Name)
	}
}

// terminate: Ready goes False, preStop, SIGTERM, SIGKILL after the grace period, the
// final status, then the pod object is removed (grace 0), as the kubelet finalises it.
func (w *podWorker) terminate(pod *v1.Pod) {
	w.logf("deleting (grace %s)", w.grace(pod))
	for _, c := range w.containerList() {
		c.mu.Lock()
		c.stopping = true
		c.mu.Unlock()
	}
	w.writeStatus(pod)
	w.stopAll(pod, true)
	w.refreshFromAPI(pod)
	w.mu.Lock()
	latest := w.pod
	w.mu.Unlock()
	w.writeStatus(latest)
	err := w.rt.cs.CoreV1().Pods(pod.Namespace).Delete(w.rt.ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To(int64(0)), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		w.logf("final delete: %v", err)
	}
	w.cleanup()
}

func (w *podWorker) refreshFromAPI(pod *v1.Pod) {
	p, err := w.rt.cs.CoreV1().Pods(pod.Namespace).Get(w.rt.ctx, pod.Name, metav1.GetOptions{})
	if err == nil && p.UID == pod.UID {
		w.mu.Lock()
		w.pod = p
		w.mu.Unlock()
	}
}

func (w *podWorker) cleanup() {
	if w.kwokDone {
		ctx, cancel := context.WithTimeout(w.rt.ctx, 10*time.Second)
		for _, gvr := range []schema.GroupVersionResource{logsGVR, execsGVR} {
			_ = w.rt.dyn.Resource(gvr).Namespace(w.ns).Delete(ctx, w.name, metav1.DeleteOptions{
				Preconditions: nil, PropagationPolicy: nil})
		}
		cancel()
	}
	_ = os.RemoveAll(w.dir)
}

// ---- status ------------------------------------------------------------------------

func (w *podWorker) buildStatus(pod *v1.Pod) v1.PodStatus {
	st := v1.PodStatus{QOSClass: pod.Status.QOSClass, HostIP: "127.0.0.1", HostIPs: []v1.HostIP{{IP: "127.0.0.1"}}}
	var statuses []v1.ContainerStatus
	var notReady, incomplete []string
	for _, c := range pod.Spec.InitContainers {
		incomplete = append(incomplete, c.Name)
	}
	allReady := true
	switch {
	case !w.setUp || w.waitReason != "":
		st.Phase = v1.PodPending
		reason := w.waitReason
		if reason == "" {
			reason = "ContainerCreating"
		}
		st.InitContainerStatuses = waitingStatuses(pod.Spec.InitContainers, reason, w.waitMsg)
		statuses = waitingStatuses(pod.Spec.Containers, reason, w.waitMsg)
		for _, c := range pod.Spec.Containers {
			notReady = append(notReady, c.Name)
		}
		allReady = false
		if w.waitReason == "MaxPodsExceeded" {
			st.Reason, st.Message = w.waitReason, w.waitMsg
		}
	case !w.initDone && len(pod.Spec.InitContainers) > 0:
		st.PodIP, st.PodIPs, st.StartTime = w.ip, []v1.PodIP{{IP: w.ip}}, &w.startTime
		var failed bool
		st.InitContainerStatuses, incomplete, failed = w.initStatuses(pod)
		statuses = waitingStatuses(pod.Spec.Containers, "PodInitializing", "")
		for _, c := range pod.Spec.Containers {
			notReady = append(notReady, c.Name)
		}
		allReady = false
		st.Phase = v1.PodPending
		if failed {
			st.Phase = v1.PodFailed
		}
	default:
		st.PodIP, st.PodIPs, st.StartTime = w.ip, []v1.PodIP{{IP: w.ip}}, &w.startTime
		st.InitContainerStatuses, incomplete, _ = w.initStatuses(pod)
		statuses, notReady, st.Phase = w.mainStatuses(pod)
		allReady = len(notReady) == 0
	}
	st.ContainerStatuses = statuses
	trimPodMessages(&st, len(pod.Spec.Containers)+len(pod.Spec.InitContainers))

	old := map[v1.PodConditionType]v1.PodCondition{}
	for _, c := range pod.Status.Conditions {
		old[c.Type] = c
	}
	now := mt(time.Now())
	cond := func(t v1.PodConditionType, ok bool, reason, msg string) v1.PodCondition {
		s := v1.ConditionFalse
		if ok {
			s = v1.ConditionTrue
		}
		c := v1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: now}
		if o, ok := old[t]; ok && o.Status == s {
			c.LastTransitionTime = o.LastTransitionTime
		}
		return c
	}
	reason, msg := "", ""
	if !allReady {
		reason = "ContainersNotReady"
		msg = fmt.Sprintf("containers with unready status: [%s]", strings.Join(notReady, " "))
	}
	if st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		reason, msg = "PodCompleted", ""
	}
	initOK, initReason, initMsg := initializedCondition(incomplete)
	st.Conditions = []v1.PodCondition{
		cond(v1.PodReadyToStartContainers, w.setUp && w.waitReason == "", "", ""),
		cond(v1.PodInitialized, initOK, initReason, initMsg),
		cond(v1.PodReady, allReady, reason, msg),
		cond(v1.ContainersReady, allReady, reason, msg),
	}
	if o, ok := old[v1.PodScheduled]; ok {
		st.Conditions = append(st.Conditions, o)
	} else {
		st.Conditions = append(st.Conditions, cond(v1.PodScheduled, true, "", ""))
	}
	for _, c := range pod.Status.Conditions { // readiness gates and others: kept as they are
		switch c.Type {
		case v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled:
		default:
			st.Conditions = append(st.Conditions, c)
		}
	}
	return st
}

// mainStatuses is pod.status.containerStatuses once the init containers have completed,
// the names of the containers not ready, and the pod's phase.
func (w *podWorker) mainStatuses(pod *v1.Pod) ([]v1.ContainerStatus, []string, v1.PodPhase) {
	ctrs := w.mainList()
	var statuses []v1.ContainerStatus
	var notReady []string
	pending, running, failed, terminated := false, false, false, 0
	for _, c := range ctrs {
		cs := c.status()
		statuses = append(statuses, cs)
		if !cs.Ready {
			notReady = append(notReady, c.spec.Name)
		}
		switch {
		case cs.State.Running != nil:
			running = true
		case cs.State.Terminated != nil:
			terminated++
			if cs.State.Terminated.ExitCode != 0 {
				failed = true
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil && cs.RestartCount == 0:
			pending = true
		default:
			running = true // waiting to restart
		}
	}
	always := pod.Spec.RestartPolicy == "" || pod.Spec.RestartPolicy == v1.RestartPolicyAlways
	switch {
	case pending:
		return statuses, notReady, v1.PodPending
	case always:
		return statuses, notReady, v1.PodRunning // whatever ended will be restarted
	case terminated == len(ctrs) && len(ctrs) > 0 && failed:
		return statuses, notReady, v1.PodFailed
	case terminated == len(ctrs) && len(ctrs) > 0:
		return statuses, notReady, v1.PodSucceeded
	case running || terminated > 0:
		return statuses, notReady, v1.PodRunning
	}
	return statuses, notReady, v1.PodPending
}

// writeStatus writes the pod's status when it differs from what is there.
func (w *podWorker) writeStatus(pod *v1.Pod) {
	st := w.buildStatus(pod)
	if w.lastWritten != nil && equality.Semantic.DeepEqual(*w.lastWritten, st) {
		return
	}
	if equality.Semantic.DeepEqual(pod.Status, st) {
		w.lastWritten = &st
		return
	}
	for attempt := 0; attempt < 2; attempt++ {
		p := pod.DeepCopy()
		p.Status = st
		_, err := w.rt.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(w.rt.ctx, p, metav1.UpdateOptions{})
		if err == nil {
			w.lastWritten = &st
			return
		}
		if !apierrors.IsConflict(err) {
			if !apierrors.IsNotFound(err) {
				w.logf("status: %v", err)
			}
			return
		}
		latest, gerr := w.rt.cs.CoreV1().Pods(pod.Namespace).Get(w.rt.ctx, pod.Name, metav1.GetOptions{})
		if gerr != nil || latest.UID != pod.UID {
			return
		}
		pod = latest
		st = w.buildStatus(pod)
	}
}

// ---- kwok Logs / Exec: `kubectl logs` and `kubectl exec` are served by kwok -------------

var (
	logsGVR  = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "logs"}
	execsGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "execs"}
)

// ensureKwokObjects creates the pod's Logs and Exec objects once every container has
// started once (its env and working dir are known then).
func (w *podWorker) ensureKwokObjects(pod *v1.Pod) error {
	var logs, execs []interface{}
	for _, c := range w.containerList() {
		c.mu.Lock()
		env, dir := c.env, c.dir
		c.mu.Unlock()
		if env == nil {
			return nil // not started yet
		}
		logs = append(logs, map[string]interface{}{"containers": []interface{}{c.spec.Name},
			"logsFile": c.logPath(), "previousLogsFile": c.prevLogPath(), "follow": true})
		var envs []interface{}
		for _, kv := range env {
			i := strings.IndexByte(kv, '=')
			envs = append(envs, map[string]interface{}{"name": kv[:i], "value": kv[i+1:]})
		}
		execs = append(execs, map[string]interface{}{"containers": []interface{}{c.spec.Name},
			"local": map[string]interface{}{"workDir": dir, "envs": envs}})
	}
	owner := []interface{}{map[string]interface{}{"apiVersion": "v1", "kind": "Pod", "name": pod.Name, "uid": string(pod.UID)}}
	for _, o := range []struct {
		gvr  schema.GroupVersionResource
		kind string
		spec map[string]interface{}
	}{{logsGVR, "Logs", map[string]interface{}{"logs": logs}}, {execsGVR, "Exec", map[string]interface{}{"execs": execs}}} {
		u := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": o.kind,
			"metadata": map[string]interface{}{"name": pod.Name, "namespace": pod.Namespace, "ownerReferences": owner},
			"spec":     o.spec}}
		ri := w.rt.dyn.Resource(o.gvr).Namespace(pod.Namespace)
		_, err := ri.Create(w.rt.ctx, u, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			cur, gerr := ri.Get(w.rt.ctx, pod.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			u.SetResourceVersion(cur.GetResourceVersion())
			_, err = ri.Update(w.rt.ctx, u, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("%s: %v", o.kind, err)
		}
	}
	w.kwokDone = true
	return nil
}
