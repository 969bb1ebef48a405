// validate: the checks of `operator-sdk bundle validate --select-optional
// suite=operatorframework`, run on a bundle directory with operator-framework/api's own
// validators (the library operator-sdk calls), so that no operator-sdk binary is needed.
//
//	validate [-k8s-version 1.37] BUNDLE_DIR
//	validate -catalog FILE BUNDLE_DIR    a file-based catalog (catalog.go)
//
// Runs the default bundle validators (ClusterServiceVersion, CustomResourceDefinition,
// Bundle, plus the Object validator operator-sdk adds) and the operatorframework suite
// (OperatorHubV2, StandardCapabilities, StandardCategories, GoodPractices,
// AlphaDeprecatedAPIs), and checks metadata/annotations.yaml as the bundle format
// requires. Prints every result; exits 1 on any error or warning (the project wants
// zero of both), 2 when the bundle cannot be read.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	apivalidation "github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	"sigs.k8s.io/yaml"
)

type annotationsFile struct {
	Annotations map[string]string `json:"annotations"`
}

// checkAnnotations: the labels the bundle format requires, pointing at dirs that exist.
func checkAnnotations(dir string, pkg string) []string {
	var bad []string
	raw, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return []string{"metadata/annotations.yaml: " + err.Error()}
	}
	var a annotationsFile
	if err := yaml.UnmarshalStrict(raw, &a); err != nil {
		return []string{"metadata/annotations.yaml: " + err.Error()}
	}
	want := map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1": "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":  "metadata/",
		"operators.operatorframework.io.bundle.package.v1":   pkg,
	}
	for k, v := range want {
		if a.Annotations[k] != v {
			bad = append(bad, fmt.Sprintf("metadata/annotations.yaml: %s is %q, want %q", k, a.Annotations[k], v))
		}
	}
	if a.Annotations["operators.operatorframework.io.bundle.channels.v1"] == "" {
		bad = append(bad, "metadata/annotations.yaml: no operators.operatorframework.io.bundle.channels.v1")
	}
	return bad
}

// The deprecated-API check reads the CSV's RBAC rules, which name a group and a resource but
// no version, and flags "poddisruptionbudgets" as policy/v1beta1 (removed in 1.25) although
// the operator only uses policy/v1 (operator-sdk#6237, a known false positive). Waived
// only when that is the whole warning: the PDB resource alone, and only in RBAC rules.
var rbacOnlyPDB = regexp.MustCompile(`Migrate the API\(s\) for poddisruptionbudgets: \(\[("ClusterServiceVersion\.Spec\.InstallStrategy\.StrategySpec\.(Cluster)?Permissions\[\d+\]\.Rules\[\d+\]" ?)+\]\)$`)

func main() {
	k8s := flag.String("k8s-version", "", "Kubernetes version for the deprecated-APIs check (default: the CSV's minKubeVersion)")
	catalog := flag.String("catalog", "", "validate this file-based catalog (its bundle: BUNDLE_DIR) instead (catalog.go)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: validate [-k8s-version X.Y] BUNDLE_DIR | validate -catalog FILE BUNDLE_DIR")
		os.Exit(2)
	}
	dir := flag.Arg(0)
	if *catalog != "" {
		if validateCatalog(*catalog, dir) > 0 {
			os.Exit(1)
		}
		return
	}
	bundle, err := apimanifests.GetBundleFromDir(filepath.Join(dir, "manifests"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "validate: cannot read %s/manifests: %v\n", dir, err)
		os.Exit(2)
	}
	if bundle.CSV == nil {
		fmt.Fprintf(os.Stderr, "validate: no ClusterServiceVersion in %s/manifests\n", dir)
		os.Exit(2)
	}
	values := map[string]string{}
	if *k8s != "" {
		values["k8s-version"] = *k8s
	}
	objs := bundle.ObjectsToValidate()
	for _, o := range bundle.Objects {
		objs = append(objs, o)
	}
	objs = append(objs, values)

	validators := apivalidation.DefaultBundleValidators.WithValidators(apivalidation.ObjectValidator)
	suite := []struct {
		name string
		v    interface {
			Validate(...interface{}) []errors.ManifestResult
		}
	}{
		{"default", validators},
		{"operatorhubv2", apivalidation.OperatorHubV2Validator},
		{"standardcapabilities", apivalidation.StandardCapabilitiesValidator},
		{"standardcategories", apivalidation.StandardCategoriesValidator},
		{"good-practices", apivalidation.GoodPracticesValidator},
		{"alpha-deprecated-apis", apivalidation.AlphaDeprecatedAPIsValidator},
	}
	nerr, nwarn := 0, 0
	for _, s := range suite {
		for _, r := range s.v.Validate(objs...) {
			for _, e := range r.Errors {
				nerr++
				fmt.Printf("ERROR   [%s] %s: %s\n", s.name, r.Name, e.Error())
			}
			for _, w := range r.Warnings {
				if rbacOnlyPDB.MatchString(w.Error()) {
					fmt.Printf("WAIVED  [%s] %s: %s (RBAC rules carry no API version: operator-sdk#6237)\n", s.name, r.Name, w.Error())
					continue
				}
				nwarn++
				fmt.Printf("WARNING [%s] %s: %s\n", s.name, r.Name, w.Error())
			}
		}
		fmt.Printf("ran %s\n", s.name)
	}
	// The package is the CSV's name up to ".v<version>" (GetBundleFromDir does not read
	// the annotations).
	pkg := strings.SplitN(bundle.CSV.GetName(), ".v", 2)[0]
	for _, b := range checkAnnotations(dir, pkg) {
		nerr++
		fmt.Printf("ERROR   [format] %s\n", b)
	}
	fmt.Printf("bundle %s (package %s, %d objects): %d errors, %d warnings\n", bundle.CSV.GetName(), pkg, len(bundle.Objects), nerr, nwarn)
	if nerr+nwarn > 0 {
		os.Exit(1)
	}
}
