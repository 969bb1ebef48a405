package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type probeKind int

const (
	startupProbe probeKind = iota
	livenessProbe
	readinessProbe
)

func (k probeKind) String() string {
	return [...]string{"Startup", "Liveness", "Readiness"}[k]
}

// startProbes runs the container's probes until ctx ends (the process exited).
func (w *podWorker) startProbes(ctx context.Context, c *container) {
	if p := c.spec.StartupProbe; p != nil {
		go w.probeLoop(ctx, c, p, startupProbe)
	}
	if p := c.spec.LivenessProbe; p != nil {
		go w.probeLoop(ctx, c, p, livenessProbe)
	}
	if p := c.spec.ReadinessProbe; p != nil {
		go w.probeLoop(ctx, c, p, readinessProbe)
	}
}

func orDefault(v, def int32) int32 {
	if v <= 0 {
		return def
	}
	return v
}

// probeLoop follows the kubelet's rules: initialDelaySeconds, then one probe every
// periodSeconds with timeoutSeconds; successThreshold consecutive successes or
// failureThreshold consecutive failures change the result. Liveness and readiness wait
// until the startup probe has succeeded.
func (w *podWorker) probeLoop(ctx context.Context, c *container, p *v1.Probe, kind probeKind) {
	period := time.Duration(orDefault(p.PeriodSeconds, 10)) * time.Second
	timeout := time.Duration(orDefault(p.TimeoutSeconds, 1)) * time.Second
	succThr, failThr := int(orDefault(p.SuccessThreshold, 1)), int(orDefault(p.FailureThreshold, 3))
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Duration(p.InitialDelaySeconds) * time.Second):
	}
	t := time.NewTicker(period)
	defer t.Stop()
	succ, fail := 0, 0
	for {
		c.mu.Lock()
		started := c.started
		c.mu.Unlock()
		if kind == startupProbe || started {
			err := w.probeOnce(ctx, c, &p.ProbeHandler, timeout)
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				succ, fail = succ+1, 0
			} else {
				succ, fail = 0, fail+1
			}
			switch kind {
			case startupProbe:
				if succ >= 1 {
					c.mu.Lock()
					c.started = true
					c.mu.Unlock()
					w.poke()
					return
				}
				if fail >= failThr {
					w.failContainer(c, fmt.Sprintf("Startup probe failed: %v", err))
					return
				}
			case livenessProbe:
				if fail >= failThr {
					w.failContainer(c, fmt.Sprintf("Liveness probe failed: %v", err))
					return
				}
			case readinessProbe:
				c.mu.Lock()
				was := c.ready
				if succ >= succThr {
					c.ready = true
				} else if fail >= failThr {
					c.ready = false
				}
				now := c.ready
				c.mu.Unlock()
				if was != now {
					if err != nil {
						w.logf("container %s: readiness probe failed: %v", c.spec.Name, err)
					}
					w.poke()
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (w *podWorker) failContainer(c *container, why string) {
	c.mu.Lock()
	c.liveFailed = why
	c.mu.Unlock()
	w.logf("container %s: %s: killing it", c.spec.Name, why)
	w.poke()
}

// probeOnce runs one exec, tcpSocket or httpGet probe against the pod IP.
func (w *podWorker) probeOnce(ctx context.Context, c *container, h *v1.ProbeHandler, timeout time.Duration) error {
	switch {
	case h.Exec != nil:
		out, err := w.execInContainer(ctx, c, h.Exec.Command, timeout)
		if err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	case h.TCPSocket != nil:
		port, err := resolvePort(h.TCPSocket.Port, &c.spec)
		if err != nil {
			return err
		}
		d := net.Dialer{Timeout: timeout}
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(w.ip, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	case h.HTTPGet != nil:
		port, err := resolvePort(h.HTTPGet.Port, &c.spec)
		if err != nil {
			return err
		}
		scheme := "http"
		if h.HTTPGet.Scheme == v1.URISchemeHTTPS {
			return fmt.Errorf("httpGet probes over HTTPS are not supported by the process runtime")
		}
		cl := http.Client{Timeout: timeout}
		resp, err := cl.Get(fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(w.ip, strconv.Itoa(port)), h.HTTPGet.Path))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
		}
		return nil
	case h.GRPC != nil:
		return fmt.Errorf("grpc probes are not supported by the process runtime")
	}
	return fmt.Errorf("probe has no handler")
}

func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("port %q not found in container %s", p.StrVal, c.Name)
}

// execInContainer runs a command in the container's context: its env (PATH with the
// wrappers first, RDC_POD_IP), its working dir, paths translated through its mounts. The
// command's process group is killed when the timeout passes.
func (w *podWorker) execInContainer(ctx context.Context, c *container, cmdline []string, timeout time.Duration) ([]byte, error) {
	if len(cmdline) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	c.mu.Lock()
	env, dir := c.env, c.dir
	c.mu.Unlock()
	mounts := w.mountsOf(&c.spec)
	argv := make([]string, len(cmdline))
	for i, a := range cmdline {
		argv[i] = mounts.translateArg(a)
	}
	path, err := resolveProgram(argv[0], envPath(env))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() == context.DeadlineExceeded {
		return out, fmt.Errorf("command timed out after %s", timeout)
	}
	return out, err
}

func envPath(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if strings.HasPrefix(env[i], "PATH=") {
			return env[i][5:]
		}
	}
	return defaultPath
}

// resolveProgram finds argv[0] as a container would: a path as is, a name on PATH.
func resolveProgram(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if err := syscall.Access(p, 1 /* X_OK */); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}
