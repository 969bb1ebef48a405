package main

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Init containers, as the kubelet runs them: one after another, each to completion (exit
// 0), before any of spec.containers starts, with the same process, mount namespace and
// volume handling as the other containers (syncContainer). A failed one runs again after
// the crash-loop back-off (restartPolicy Always counts as OnFailure for init containers);
// under restartPolicy Never it fails the pod. Once all have completed they do not run
// again for this pod, even when a main container restarts. A runtime restart runs them
// again, as the kubelet does for a new sandbox. Sidecars (an init container with its own
// restartPolicy) are refused in setup.

// initPolicy is the restart policy of the pod's init containers.
func initPolicy(pod *v1.Pod) v1.RestartPolicy {
	if pod.Spec.RestartPolicy == v1.RestartPolicyNever {
		return v1.RestartPolicyNever
	}
	return v1.RestartPolicyOnFailure
}

// syncInits starts (or waits for) the first init container that has not completed; true
// when every one has, and from then on.
func (w *podWorker) syncInits(pod *v1.Pod) bool {
	if w.initDone {
		return true
	}
	w.mu.Lock()
	inits := append([]*container(nil), w.inits...)
	w.mu.Unlock()
	for _, c := range inits {
		if !c.completed() {
			w.syncContainer(pod, c, initPolicy(pod))
			return false
		}
	}
	w.initDone = true
	return true
}

// completed: the container's last run ended with exit code 0 and it is not running.
func (c *container) completed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.running && c.last != nil && c.last.ExitCode == 0
}

// failedForGood: the container failed and policy never runs it again.
func (c *container) failedForGood(policy v1.RestartPolicy) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return policy == v1.RestartPolicyNever && !c.running && c.last != nil && c.last.ExitCode != 0
}

// initStatuses is pod.status.initContainerStatuses once the pod is set up, the names of
// the init containers that have not completed, and whether one failed for good.
func (w *podWorker) initStatuses(pod *v1.Pod) ([]v1.ContainerStatus, []string, bool) {
	w.mu.Lock()
	inits := append([]*container(nil), w.inits...)
	w.mu.Unlock()
	var out []v1.ContainerStatus
	var incomplete []string
	failed := false
	for _, c := range inits {
		cs := c.status()
		done := c.completed()
		cs.Ready = done // as the kubelet reports a completed init container
		if !done {
			incomplete = append(incomplete, c.spec.Name)
		}
		if c.failedForGood(initPolicy(pod)) {
			failed = true
		}
		out = append(out, cs)
	}
	return out, incomplete, failed
}

// waitingStatuses: every container of specs waiting with reason and msg.
func waitingStatuses(specs []v1.Container, reason, msg string) []v1.ContainerStatus {
	var out []v1.ContainerStatus
	for _, c := range specs {
		out = append(out, v1.ContainerStatus{Name: c.Name, Image: c.Image, Started: ptr.To(false),
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason, Message: msg}}})
	}
	return out
}

// initializedCondition is the Initialized condition's status, reason and message.
func initializedCondition(incomplete []string) (bool, string, string) {
	if len(incomplete) == 0 {
		return true, "", ""
	}
	return false, "ContainersNotInitialized",
		"containers with incomplete status: [" + strings.Join(incomplete, " ") + "]"
}
