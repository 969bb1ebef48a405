package main

import (
	"log"
	"os"
	"path/filepath"
	"runtime"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The label and taint of a process node: a pod lands there only if it tolerates the taint,
// and only there if it also selects the label (cluster.sh pin-namespace NS does both for
// every pod of a namespace through the PodNodeSelector/PodTolerationRestriction plugins).
const (
	processNodeLabel = "rdc.local/process-node"
	leaseSeconds     = 40
	leaseRenew       = 10 * time.Second
	statusEvery      = 30 * time.Second
)

// nodeLoop registers the node (as a kubelet does) and keeps its status and Lease fresh,
// except while the node is "lost".
func (rt *Runtime) nodeLoop(name string) {
	for {
		if err := rt.registerNode(name); err == nil {
			break
		} else {
			log.Printf("node %s: register: %v", name, err)
		}
		select {
		case <-rt.ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	var lastStatus time.Time
	t := time.NewTicker(leaseRenew)
	defer t.Stop()
	for {
		if !rt.isLost(name) {
			if time.Since(lastStatus) >= statusEvery {
				if err := rt.updateNodeStatus(name); err != nil {
					log.Printf("node %s: status: %v", name, err)
				} else {
					lastStatus = time.Now()
				}
			}
			if err := rt.renewLease(name); err != nil {
				log.Printf("node %s: lease: %v", name, err)
			}
		} else {
			lastStatus = time.Time{} // report at once when it comes back
		}
		select {
		case <-rt.ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (rt *Runtime) registerNode(name string) error {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"type":                           "process",
				processNodeLabel:                 "true",
				"kubernetes.io/hostname":         name,
				"kubernetes.io/os":               "linux",
				"kubernetes.io/arch":             runtime.GOARCH,
				"node-role.kubernetes.io/worker": "",
			},
		},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: processNodeLabel, Value: "true", Effect: v1.TaintEffectNoSchedule}}},
	}
	_, err := rt.cs.CoreV1().Nodes().Create(rt.ctx, n, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return rt.updateNodeStatus(name)
}

func (rt *Runtime) updateNodeStatus(name string) error {
	n, err := rt.cs.CoreV1().Nodes().Get(rt.ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	cond := func(t v1.NodeConditionType, st v1.ConditionStatus, reason, msg string) v1.NodeCondition {
		c := v1.NodeCondition{Type: t, Status: st, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
		for _, old := range n.Status.Conditions {
			if old.Type == t && old.Status == st {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		return c
	}
	pods := resource.MustParse("110")
	list := v1.ResourceList{v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi"), v1.ResourcePods: pods}
	n.Status.Conditions = []v1.NodeCondition{
		cond(v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory", "no memory pressure (not measured)"),
		cond(v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure", "no disk pressure (not measured)"),
		cond(v1.NodePIDPressure, v1.ConditionFalse, "KubeletHasSufficientPID", "no PID pressure (not measured)"),
		cond(v1.NodeReady, v1.ConditionTrue, "KubeletReady", "rdc-pod-runtime is posting ready status"),
	}
	n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}}
	n.Status.Capacity, n.Status.Allocatable = list, list
	n.Status.Phase = v1.NodeRunning
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(rt.cfg.kubeletPort)
	host, _ := os.Hostname()
	n.Status.NodeInfo = v1.NodeSystemInfo{
		MachineID: host, OperatingSystem: "linux", Architecture: runtime.GOARCH,
		KernelVersion: kernelVersion(), OSImage: "local processes (rdc-pod-runtime)",
		ContainerRuntimeVersion: "rdc-pod-runtime://0.1", KubeletVersion: "rdc-pod-runtime-0.1",
	}
	_, err = rt.cs.CoreV1().Nodes().UpdateStatus(rt.ctx, n, metav1.UpdateOptions{})
	return err
}

func kernelVersion() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return string(b[:len(b)-1])
}

func (rt *Runtime) renewLease(name string) error {
	leases := rt.cs.CoordinationV1().Leases(v1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(rt.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		n, nerr := rt.cs.CoreV1().Nodes().Get(rt.ctx, name, metav1.GetOptions{})
		if nerr != nil {
			return nerr
		}
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1.NamespaceNodeLease,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: n.UID}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To(int32(leaseSeconds)), RenewTime: &now},
		}
		_, err = leases.Create(rt.ctx, l, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	l.Spec.HolderIdentity = ptr.To(name)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(leaseSeconds))
	l.Spec.RenewTime = &now
	_, err = leases.Update(rt.ctx, l, metav1.UpdateOptions{})
	return err
}

// writeWrappers puts redis-cli and redis-server wrappers into <state>/bin, first on the
// PATH of every container, exec probe and `kubectl exec` (kwok runs with that PATH):
// inside a pod (RDC_POD_IP set) "localhost" means the pod, so redis-cli gets `-h <pod IP>`
// (an explicit -h 127.0.0.1/localhost is rewritten too) and redis-server `--bind <pod IP>`.
func (rt *Runtime) writeWrappers() error {
	rt.bins = map[string]string{}
	for _, p := range []string{"redis-server", "redis-cli"} {
		path, err := lookPathOutside(p, rt.wrapperDir())
		if err != nil {
			log.Printf("warning: %s not found on PATH (apt-get install redis-server redis-tools): redis images cannot run", p)
			continue
		}
		rt.bins[p] = path
	}
	cli := `#!/bin/sh
# rdc-pod-runtime wrapper: inside a pod (RDC_POD_IP set) localhost is the pod itself.
real=` + shq(rt.bins["redis-cli"]) + `
[ -n "${RDC_POD_IP:-}" ] || exec "$real" "$@"
n=$#; prev=
for a in "$@"; do
  case "$prev" in -h) case "$a" in 127.0.0.1|localhost|::1) a=$RDC_POD_IP ;; esac ;; esac
  set -- "$@" "$a"; prev=$a
done
shift "$n"
exec "$real" -h "$RDC_POD_IP" "$@"
`
	srv := `#!/bin/sh
# rdc-pod-runtime wrapper: inside a pod (RDC_POD_IP set) Redis listens on the pod IP only.
real=` + shq(rt.bins["redis-server"]) + `
[ -n "${RDC_POD_IP:-}" ] || exec "$real" "$@"
exec "$real" "$@" --bind "$RDC_POD_IP"
`
	for name, body := range map[string]string{"redis-cli": cli, "redis-server": srv} {
		tmp := filepath.Join(rt.wrapperDir(), "."+name+".tmp")
		if err := os.WriteFile(tmp, []byte(body), 0o755); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(rt.wrapperDir(), name)); err != nil {
			return err
		}
	}
	return nil
}
