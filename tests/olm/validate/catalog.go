// The file-based catalog's checks (validate -catalog FILE BUNDLE_DIR), for make
// catalog-build: what `opm validate` checks of a catalog's olm.package, olm.channel and
// olm.bundle blobs (no opm here: operator-registry is not served by the module proxy),
// that its bundle is the bundle directory's (name, version, package, the CRDs' group,
// version and kind), and operator-framework/api's PackageManifestValidator on the package
// and channels the catalog declares (a channel's head is its currentCSV).
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	apivalidation "github.com/operator-framework/api/pkg/validation"
	"sigs.k8s.io/yaml"
)

type fbcProperty struct {
	Type  string         `json:"type"`
	Value map[string]any `json:"value"`
}

type fbcEntry struct {
	Name     string   `json:"name"`
	Replaces string   `json:"replaces,omitempty"`
	Skips    []string `json:"skips,omitempty"`
}

// One blob of the catalog; which fields apply depends on Schema.
type fbcBlob struct {
	Schema         string `json:"schema"`
	Name           string `json:"name"`
	Package        string `json:"package,omitempty"`
	DefaultChannel string `json:"defaultChannel,omitempty"`
	Description    string `json:"description,omitempty"`
	Icon           *struct {
		Data      string `json:"base64data"`
		MediaType string `json:"mediatype"`
	} `json:"icon,omitempty"`
	Entries       []fbcEntry    `json:"entries,omitempty"`
	Image         string        `json:"image,omitempty"`
	Properties    []fbcProperty `json:"properties,omitempty"`
	RelatedImages []struct {
		Name  string `json:"name"`
		Image string `json:"image"`
	} `json:"relatedImages,omitempty"`
}

var semverRe = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// loadCatalog: the blobs of a catalog file, YAML documents separated by "---".
func loadCatalog(path string) ([]fbcBlob, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var blobs []fbcBlob
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
		if len(bytes.TrimSpace([]byte(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")))) == 0 {
			continue
		}
		var b fbcBlob
		if err := yaml.UnmarshalStrict([]byte(doc), &b); err != nil {
			return nil, fmt.Errorf("document %d: %v", i, err)
		}
		blobs = append(blobs, b)
	}
	return blobs, nil
}

// checkChannel: every entry a bundle of the package, names unique, one head (the entry no
// other replaces or skips). Returns the head's name.
func checkChannel(c fbcBlob, bundles map[string]fbcBlob) (string, []string) {
	var bad []string
	if len(c.Entries) == 0 {
		return "", []string{fmt.Sprintf("channel %s: no entries", c.Name)}
	}
	replaced, seen := map[string]bool{}, map[string]bool{}
	for _, e := range c.Entries {
		if seen[e.Name] {
			bad = append(bad, fmt.Sprintf("channel %s: entry %s twice", c.Name, e.Name))
		}
		seen[e.Name] = true
		if b, ok := bundles[e.Name]; !ok || b.Package != c.Package {
			bad = append(bad, fmt.Sprintf("channel %s: entry %s is no bundle of package %s", c.Name, e.Name, c.Package))
		}
		if e.Replaces != "" {
			replaced[e.Replaces] = true
		}
		for _, s := range e.Skips {
			replaced[s] = true
		}
	}
	var heads []string
	for _, e := range c.Entries {
		if !replaced[e.Name] {
			heads = append(heads, e.Name)
		}
	}
	if len(heads) != 1 {
		bad = append(bad, fmt.Sprintf("channel %s: %d heads %v, want exactly one", c.Name, len(heads), heads))
		return "", bad
	}
	return heads[0], bad
}

// checkBundle: the blob's properties and image, and that it is the bundle directory's.
func checkBundle(b fbcBlob, bundle *apimanifests.Bundle) []string {
	var bad []string
	if b.Image == "" {
		bad = append(bad, fmt.Sprintf("bundle %s: no image", b.Name))
	}
	var pkgs, gvks []string
	for _, p := range b.Properties {
		switch p.Type {
		case "olm.package":
			v, _ := p.Value["version"].(string)
			if !semverRe.MatchString(v) {
				bad = append(bad, fmt.Sprintf("bundle %s: olm.package version %q is not semver", b.Name, v))
			}
			pkgs = append(pkgs, fmt.Sprintf("%v@%v", p.Value["packageName"], v))
		case "olm.gvk":
			gvks = append(gvks, fmt.Sprintf("%v/%v/%v", p.Value["group"], p.Value["version"], p.Value["kind"]))
		}
	}
	csv := bundle.CSV
	want := fmt.Sprintf("%s@%s", b.Package, csv.Spec.Version.String())
	if len(pkgs) != 1 || pkgs[0] != want {
		bad = append(bad, fmt.Sprintf("bundle %s: olm.package properties %v, want one %s", b.Name, pkgs, want))
	}
	if b.Name != csv.GetName() {
		bad = append(bad, fmt.Sprintf("bundle %s: the bundle directory's CSV is %s", b.Name, csv.GetName()))
	}
	var crdGVKs []string
	for _, crd := range bundle.V1CRDs {
		for _, v := range crd.Spec.Versions {
			if v.Served {
				crdGVKs = append(crdGVKs, fmt.Sprintf("%s/%s/%s", crd.Spec.Group, v.Name, crd.Spec.Names.Kind))
			}
		}
	}
	sort.Strings(gvks)
	sort.Strings(crdGVKs)
	if strings.Join(gvks, " ") != strings.Join(crdGVKs, " ") {
		bad = append(bad, fmt.Sprintf("bundle %s: olm.gvk %v, the bundle's CRDs serve %v", b.Name, gvks, crdGVKs))
	}
	return bad
}

// validateCatalog prints every finding and returns how many there were.
func validateCatalog(path, bundleDir string) int {
	blobs, err := loadCatalog(path)
	if err != nil {
		fmt.Printf("ERROR   [catalog] %s: %v\n", path, err)
		return 1
	}
	bundle, err := apimanifests.GetBundleFromDir(filepath.Join(bundleDir, "manifests"))
	if err != nil || bundle.CSV == nil {
		fmt.Printf("ERROR   [catalog] cannot read the bundle %s: %v\n", bundleDir, err)
		return 1
	}
	var bad []string
	pkgs, bundles := map[string]fbcBlob{}, map[string]fbcBlob{}
	var channels []fbcBlob
	for _, b := range blobs {
		switch b.Schema {
		case "olm.package":
			if _, dup := pkgs[b.Name]; dup {
				bad = append(bad, "package "+b.Name+" twice")
			}
			pkgs[b.Name] = b
		case "olm.channel":
			channels = append(channels, b)
		case "olm.bundle":
			if _, dup := bundles[b.Name]; dup {
				bad = append(bad, "bundle "+b.Name+" twice")
			}
			bundles[b.Name] = b
		default:
			bad = append(bad, fmt.Sprintf("blob %q: schema %q is none of olm.package, olm.channel, olm.bundle", b.Name, b.Schema))
		}
	}
	if len(pkgs) != 1 {
		bad = append(bad, fmt.Sprintf("%d packages, want 1", len(pkgs)))
	}
	manifests := map[string]*apimanifests.PackageManifest{}
	for name, p := range pkgs {
		manifests[name] = &apimanifests.PackageManifest{PackageName: name, DefaultChannelName: p.DefaultChannel}
	}
	for _, c := range channels {
		pm, ok := manifests[c.Package]
		if !ok {
			bad = append(bad, fmt.Sprintf("channel %s: package %q is not in the catalog", c.Name, c.Package))
			continue
		}
		head, cbad := checkChannel(c, bundles)
		bad = append(bad, cbad...)
		pm.Channels = append(pm.Channels, apimanifests.PackageChannel{Name: c.Name, CurrentCSVName: head})
	}
	for _, b := range bundles {
		if _, ok := pkgs[b.Package]; !ok {
			bad = append(bad, fmt.Sprintf("bundle %s: package %q is not in the catalog", b.Name, b.Package))
		}
		bad = append(bad, checkBundle(b, bundle)...)
	}
	nfind := len(bad)
	for _, b := range bad {
		fmt.Printf("ERROR   [catalog] %s\n", b)
	}
	for _, pm := range manifests {
		for _, r := range apivalidation.PackageManifestValidator.Validate(pm) {
			for _, e := range r.Errors {
				nfind++
				fmt.Printf("ERROR   [package-manifest] %s: %s\n", r.Name, e.Error())
			}
			for _, w := range r.Warnings {
				nfind++
				fmt.Printf("WARNING [package-manifest] %s: %s\n", r.Name, w.Error())
			}
		}
	}
	fmt.Printf("catalog %s (%d packages, %d channels, %d bundles): %d findings\n",
		path, len(pkgs), len(channels), len(bundles), nfind)
	return nfind
}
