package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fileSet is the content of a ConfigMap/Secret/projected/downwardAPI volume.
type fileSet map[string]fileEntry

type fileEntry struct {
	data []byte
	mode os.FileMode
}

// volumeDir is where a pod's volume lives on the host. PVCs live per PersistentVolume
// under <state>/pv/ so that they outlive the pod; everything else under the pod's dir.
func (w *podWorker) volumeDir(vol *v1.Volume) string {
	return filepath.Join(w.dir, "volumes", vol.Name)
}

// setupVolumes materialises every volume once and returns the mount table of each
// container. An error says what the pod waits for (ContainerCreating).
func (w *podWorker) setupVolumes(pod *v1.Pod) (map[string]string, error) {
	hostOf := map[string]string{}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		switch {
		case vol.PersistentVolumeClaim != nil:
			pvc, err := w.rt.cs.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(w.rt.ctx, vol.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("volume %q: PersistentVolumeClaim %q: %v", vol.Name, vol.PersistentVolumeClaim.ClaimName, err)
			}
			if pvc.Status.Phase != v1.ClaimBound || pvc.Spec.VolumeName == "" {
				return nil, fmt.Errorf("volume %q: PersistentVolumeClaim %q is not bound yet", vol.Name, pvc.Name)
			}
			d := filepath.Join(w.rt.pvDir(), pvc.Spec.VolumeName)
			if err := os.MkdirAll(d, 0o777); err != nil {
				return nil, err
			}
			hostOf[vol.Name] = d
		case vol.EmptyDir != nil:
			d := w.volumeDir(vol)
			if err := os.MkdirAll(d, 0o777); err != nil {
				return nil, err
			}
			hostOf[vol.Name] = d
		case vol.HostPath != nil:
			// never the machine's own path: a directory named after it in the pod's dir
			d := filepath.Join(w.rt.cfg.stateDir, "hostpath", strings.ReplaceAll(strings.Trim(vol.HostPath.Path, "/"), "/", "_"))
			if err := os.MkdirAll(d, 0o777); err != nil {
				return nil, err
			}
			hostOf[vol.Name] = d
		case vol.ConfigMap != nil, vol.Secret != nil, vol.Projected != nil, vol.DownwardAPI != nil:
			if err := w.refreshVolume(pod, vol); err != nil {
				return nil, err
			}
			hostOf[vol.Name] = w.volumeDir(vol)
		default:
			return nil, fmt.Errorf("volume %q: this kind of volume is not supported by the process runtime", vol.Name)
		}
	}
	return hostOf, nil
}

// refreshAtomicVolumes re-reads ConfigMap/Secret/projected/downwardAPI volumes (the
// kubelet does it within a minute) and rotates service-account tokens.
func (w *podWorker) refreshAtomicVolumes(pod *v1.Pod) {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.ConfigMap != nil || vol.Secret != nil || vol.Projected != nil || vol.DownwardAPI != nil {
			if err := w.refreshVolume(pod, vol); err != nil {
				w.logf("refresh volume %s: %v", vol.Name, err)
			}
		}
	}
}

func (w *podWorker) refreshVolume(pod *v1.Pod, vol *v1.Volume) error {
	files := fileSet{}
	var err error
	switch {
	case vol.ConfigMap != nil:
		err = w.keyedFiles(false, pod.Namespace, vol.ConfigMap.Name, vol.ConfigMap.Items, vol.ConfigMap.Optional, mode(vol.ConfigMap.DefaultMode), files)
	case vol.Secret != nil:
		err = w.keyedFiles(true, pod.Namespace, vol.Secret.SecretName, vol.Secret.Items, vol.Secret.Optional, mode(vol.Secret.DefaultMode), files)
	case vol.DownwardAPI != nil:
		err = w.downwardFiles(pod, vol.DownwardAPI.Items, mode(vol.DownwardAPI.DefaultMode), files)
	case vol.Projected != nil:
		dm := mode(vol.Projected.DefaultMode)
		for _, s := range vol.Projected.Sources {
			switch {
			case s.ConfigMap != nil:
				err = w.keyedFiles(false, pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, dm, files)
			case s.Secret != nil:
				err = w.keyedFiles(true, pod.Namespace, s.Secret.Name, s.Secret.Items, s.Secret.Optional, dm, files)
			case s.DownwardAPI != nil:
				err = w.downwardFiles(pod, s.DownwardAPI.Items, dm, files)
			case s.ServiceAccountToken != nil:
				err = w.tokenFile(pod, vol.Name, s.ServiceAccountToken, dm, files)
			default:
				err = fmt.Errorf("projected source not supported by the process runtime")
			}
			if err != nil {
				return fmt.Errorf("volume %q: %v", vol.Name, err)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("volume %q: %v", vol.Name, err)
	}
	return writeAtomic(w.volumeDir(vol), files)
}

func mode(m *int32) os.FileMode {
	if m == nil {
		return 0o644
	}
	return os.FileMode(*m)
}

func itemMode(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m)
}

func project(data map[string][]byte, items []v1.KeyToPath, def os.FileMode, what string, files fileSet) error {
	if len(items) == 0 {
		for k, v := range data {
			files[k] = fileEntry{v, def}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("%s has no key %q", what, it.Key)
		}
		files[it.Path] = fileEntry{v, itemMode(it.Mode, def)}
	}
	return nil
}

// keyed is a ConfigMap's or a Secret's keys as a pod reads them: text the ConfigMap's data,
// bin its binaryData or the Secret's data.
type keyed struct {
	text map[string]string
	bin  map[string][]byte
}

// getKeyed fetches the Secret (secret) or ConfigMap ns/name; nil and no error when it is
// missing and optional, as the kubelet takes it.
func (w *podWorker) getKeyed(secret bool, ns, name string, optional *bool) (*keyed, error) {
	var o keyed
	var err error
	kind := "configmap"
	if secret {
		kind = "secret"
		var s *v1.Secret
		if s, err = w.rt.cs.CoreV1().Secrets(ns).Get(w.rt.ctx, name, metav1.GetOptions{}); err == nil {
			o.bin = s.Data
		}
	} else {
		var cm *v1.ConfigMap
		if cm, err = w.rt.cs.CoreV1().ConfigMaps(ns).Get(w.rt.ctx, name, metav1.GetOptions{}); err == nil {
			o.text, o.bin = cm.Data, cm.BinaryData
		}
	}
	if apierrors.IsNotFound(err) && ptr.Deref(optional, false) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", kind, name, err)
	}
	return &o, nil
}

// keyedFiles projects the Secret (secret) or ConfigMap ns/name into files (a volume's
// items, or all of its keys); nothing when it is missing and optional.
func (w *podWorker) keyedFiles(secret bool, ns, name string, items []v1.KeyToPath, optional *bool, def os.FileMode, files fileSet) error {
	o, err := w.getKeyed(secret, ns, name, optional)
	if o == nil || err != nil {
		return err
	}
	data := map[string][]byte{}
	for k, v := range o.text {
		data[k] = []byte(v)
	}
	for k, v := range o.bin {
		data[k] = v
	}
	what := "configmap " + name
	if secret {
		what = "secret " + name
	}
	return project(data, items, def, what, files)
}

func (w *podWorker) downwardFiles(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, def os.FileMode, files fileSet) error {
	for _, it := range items {
		if it.FieldRef == nil {
			return fmt.Errorf("downwardAPI %q: only fieldRef is supported", it.Path)
		}
		v, err := w.fieldValue(pod, it.FieldRef.FieldPath)
		if err != nil {
			return err
		}
		files[it.Path] = fileEntry{[]byte(v), itemMode(it.Mode, def)}
	}
	return nil
}

// tokenFile asks the TokenRequest API for a token bound to the pod, as the kubelet does,
// and keeps it until 80 % of its lifetime has passed.
func (w *podWorker) tokenFile(pod *v1.Pod, vol string, p *v1.ServiceAccountTokenProjection, def os.FileMode, files fileSet) error {
	key := vol + "/" + p.Path
	if t, ok := w.tokens[key]; ok && time.Now().Before(t.refresh) {
		files[p.Path] = fileEntry{[]byte(t.token), def}
		return nil
	}
	exp := ptr.Deref(p.ExpirationSeconds, 3607)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(exp),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if p.Audience != "" {
		tr.Spec.Audiences = []string{p.Audience}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	res, err := w.rt.cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(w.rt.ctx, sa, tr, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for serviceaccount %q: %v", sa, err)
	}
	issued := time.Now()
	life := res.Status.ExpirationTimestamp.Time.Sub(issued)
	w.tokens[key] = tokenInfo{token: res.Status.Token, refresh: issued.Add(life * 8 / 10)}
	files[p.Path] = fileEntry{[]byte(res.Status.Token), def}
	return nil
}

type tokenInfo struct {
	token   string
	refresh time.Time
}

// writeAtomic writes files into dir the way the kubelet's AtomicWriter does: the content
// is in a fresh directory dir/..<hash>, dir/..data is a symlink to it, swapped with one
// rename, and each top-level name in dir is a symlink through ..data. A reader sees the old
// or the new content, never half; a bind mount of dir (mount namespaces) sees updates.
// Nothing is written when the content is unchanged.
func writeAtomic(dir string, files fileSet) error {
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00", k, files[k].mode, len(files[k].data))
		h.Write(files[k].data)
	}
	version := "..." + hex.EncodeToString(h.Sum(nil))[:16]
	dataLink := filepath.Join(dir, "..data")
	if cur, err := os.Readlink(dataLink); err == nil && cur == version {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(dir, version), 0o755); err != nil {
		return err
	}
	top := map[string]bool{}
	for _, k := range keys {
		if strings.Contains(k, "..") || strings.HasPrefix(k, "/") {
			return fmt.Errorf("bad path %q", k)
		}
		top[strings.SplitN(k, "/", 2)[0]] = true
		p := filepath.Join(dir, version, k)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[k].data, files[k].mode|0o400); err != nil {
			return err
		}
		_ = os.Chmod(p, files[k].mode|0o400)
	}
	old, _ := os.Readlink(dataLink)
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(version, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dataLink); err != nil {
		return err
	}
	for t := range top {
		link := filepath.Join(dir, t)
		if cur, err := os.Readlink(link); err == nil && cur == filepath.Join("..data", t) {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(filepath.Join("..data", t), link); err != nil {
			return err
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, "..") && !top[n] {
			_ = os.Remove(filepath.Join(dir, n)) // a key that is gone
		}
	}
	if old != "" && old != version {
		_ = os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}
