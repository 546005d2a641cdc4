// chart-render: renders helm/kagent the way Helm does and validates every rendered object.
//
//	chart-render -chart helm/kagent [-f values.yaml ...] [-name R] [-namespace N]
//	    prints the manifests (like `helm template`) after validating them; exit 1 on a problem.
//	chart-render -test -repo .
//	    the chart test: every case in deploy/chart-render/testdata renders and validates with
//	    its expectations, broken values are refused, every mutation of the templates in
//	    mutations.go is caught, and the chart's copies of the dashboards and rules equal
//	    deploy/grafana and deploy/prometheus.
package main

import (
	"bytes"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func decodeBase64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

func main() {
	chartDir := flag.String("chart", "helm/kagent", "chart directory")
	var valueFiles multiFlag
	flag.Var(&valueFiles, "f", "values file (repeatable; later ones win)")
	name := flag.String("name", "kagent", "release name")
	namespace := flag.String("namespace", "kagent", "release namespace")
	test := flag.Bool("test", false, "run the chart test suite")
	repo := flag.String("repo", ".", "repository root (with -test)")
	flag.Parse()

	if *test {
		os.Exit(runSuite(*repo))
	}
	chart, err := LoadChart(*chartDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart-render:", err)
		os.Exit(1)
	}
	objs, vals, err := renderWith(chart, valueFiles, Release{*name, *namespace})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart-render:", err)
		os.Exit(1)
	}
	for _, m := range objs {
		fmt.Printf("---\n# Source: %s\n%s\n", m.Source, strings.TrimSpace(m.Text))
	}
	if errs := Validate(objs, optionsFor(vals)); len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintln(os.Stderr, "invalid:", e)
		}
		os.Exit(1)
	}
}

func renderWith(chart *Chart, valueFiles []string, rel Release) ([]Manifest, map[string]interface{}, error) {
	vals := chart.Values
	for _, f := range valueFiles {
		o, err := readYAMLFile(f)
		if err != nil {
			return nil, nil, err
		}
		vals = Coalesce(vals, o)
	}
	out, err := Render(chart, vals, rel)
	if err != nil {
		return nil, vals, err
	}
	objs, err := ParseManifests(out)
	return objs, vals, err
}

// optionsFor derives what the validator must know from the values: which Secrets live
// outside the chart and the dashboard label.
func optionsFor(vals map[string]interface{}) ValidateOptions {
	o := ValidateOptions{ExternalSecrets: map[string]bool{}, ExternalConfigMaps: map[string]bool{}}
	for _, p := range [][]string{{"internalToken", "existingSecret"}, {"auth", "existingSecret"},
		{"llm", "existingSecret"}, {"storage", "postgres", "existingSecret"}} {
		if s := str(get(vals, p...)); s != "" {
			o.ExternalSecrets[s] = true
		}
	}
	if boolOf(get(vals, "dashboards", "enabled")) {
		o.DashboardLabel = str(get(vals, "dashboards", "label"))
		o.DashboardValue = str(get(vals, "dashboards", "labelValue"))
	}
	return o
}

// ---------------------------------------------------------------------------------------
// The suite

type suite struct {
	failures int
}

func (s *suite) check(ok bool, format string, args ...interface{}) {
	if !ok {
		s.failures++
		fmt.Printf("FAIL: "+format+"\n", args...)
	}
}

func runSuite(repo string) int {
	s := &suite{}
	chartDir := filepath.Join(repo, "helm/kagent")
	chart, err := LoadChart(chartDir)
	if err != nil {
		fmt.Println("FAIL: load chart:", err)
		return 1
	}
	testdata := filepath.Join(repo, "deploy/chart-render/testdata")

	// 1. Every value set renders, validates, and meets its expectations.
	for _, c := range cases {
		var files []string
		for _, f := range c.files {
			files = append(files, filepath.Join(testdata, f))
		}
		objs, vals, err := renderWith(chart, files, Release{"kagent", "kagent-system"})
		if c.wantError != "" {
			s.check(err != nil && strings.Contains(err.Error(), c.wantError),
				"case %s: want a render error containing %q, got %v", c.name, c.wantError, err)
			fmt.Printf("case %-22s refused as expected\n", c.name)
			continue
		}
		if err != nil {
			s.check(false, "case %s: %v", c.name, err)
			continue
		}
		errs := Validate(objs, optionsFor(vals))
		for _, e := range errs {
			s.check(false, "case %s: %s", c.name, e)
		}
		idx := index(objs)
		if c.expect != nil {
			for _, problem := range c.expect(idx) {
				s.check(false, "case %s: %s", c.name, problem)
			}
		}
		fmt.Printf("case %-22s %3d objects, %d problems\n", c.name, len(objs), len(errs))
	}

	// 2. A release name that is too long still renders valid names.
	objs, vals, err := renderWith(chart, nil, Release{strings.Repeat("r", 60), "default"})
	if err != nil {
		s.check(false, "long release name: %v", err)
	} else {
		for _, e := range Validate(objs, optionsFor(vals)) {
			s.check(false, "long release name: %s", e)
		}
	}

	// 3. Every mutation of the templates is caught (render error or validation problem).
	for _, mu := range mutations {
		broken := cloneChart(chart)
		target := broken.Templates[mu.file]
		if mu.file == "values.yaml" {
			target = ""
		}
		var files []string
		for _, f := range mu.values {
			files = append(files, filepath.Join(testdata, f))
		}
		if mu.file != "" && mu.file != "values.yaml" {
			if !strings.Contains(target, mu.old) {
				s.check(false, "mutation %q: %q not found in %s (update mutations.go)", mu.name, mu.old, mu.file)
				continue
			}
			broken.Templates[mu.file] = strings.Replace(target, mu.old, mu.new, 1)
		}
		if mu.valuesPatch != "" {
			o, err := parseYAMLMap([]byte(mu.valuesPatch))
			if err != nil {
				s.check(false, "mutation %q: bad values patch: %v", mu.name, err)
				continue
			}
			broken.Values = Coalesce(broken.Values, o)
		}
		objs, vals, err := renderWith(broken, files, Release{"kagent", "kagent-system"})
		var problems []string
		if err != nil {
			problems = []string{err.Error()}
		} else {
			problems = Validate(objs, optionsFor(vals))
			if mu.expect != nil {
				problems = append(problems, mu.expect(index(objs))...)
			}
		}
		caught := false
		for _, p := range problems {
			if strings.Contains(p, mu.want) {
				caught = true
			}
		}
		s.check(caught, "mutation %q was not caught with %q; problems: %v", mu.name, mu.want, problems)
		if caught {
			fmt.Printf("mutation %-40s caught\n", mu.name)
		}
	}

	// 4. The chart's copies of the dashboards and the rules are the deploy/ originals.
	same := func(a, b string) {
		x, err1 := os.ReadFile(a)
		y, err2 := os.ReadFile(b)
		s.check(err1 == nil && err2 == nil && bytes.Equal(x, y),
			"%s and %s differ (run deploy/sync-chart-files.sh)", a, b)
	}
	originals, _ := filepath.Glob(filepath.Join(repo, "deploy/grafana/*.json"))
	copies, _ := filepath.Glob(filepath.Join(chartDir, "dashboards/*.json"))
	s.check(len(originals) > 0 && len(originals) == len(copies),
		"deploy/grafana has %d dashboards, the chart %d", len(originals), len(copies))
	for _, o := range originals {
		same(o, filepath.Join(chartDir, "dashboards", filepath.Base(o)))
	}
	same(filepath.Join(repo, "deploy/prometheus/rules.yaml"), filepath.Join(chartDir, "files/prometheus-rules.yaml"))

	// 5. The chart README documents every value.
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	s.check(err == nil, "helm/kagent/README.md: %v", err)
	for _, key := range leafKeys("", chart.Values) {
		s.check(bytes.Contains(readme, []byte("`"+key+"`")), "helm/kagent/README.md does not document `%s`", key)
	}

	if s.failures > 0 {
		fmt.Printf("chart test: %d failure(s)\n", s.failures)
		return 1
	}
	fmt.Println("chart test: ok")
	return 0
}

// leafKeys lists the documented keys: maps are walked except where a map is a free-form
// value (empty in the defaults) or a list.
func leafKeys(prefix string, m map[string]interface{}) []string {
	var out []string
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]interface{}); ok && len(sub) > 0 && !freeForm[key] {
			out = append(out, leafKeys(key, sub)...)
		} else {
			out = append(out, key)
		}
	}
	sort.Strings(out)
	return out
}

// Maps whose keys are the user's, documented as a whole.
var freeForm = map[string]bool{
	"podSecurityContext": true, "containerSecurityContext": true,
	"coordinator.resources": true, "judge.resources": true, "analyzer.resources": true,
	"orchestrator.resources": true, "optimizationManager.resources": true,
	"workers.resources": true,
}

type objIndex map[string]map[string]interface{} // "Kind/name" -> object

func index(objs []Manifest) objIndex {
	idx := objIndex{}
	for _, m := range objs {
		idx[kindOf(m)+"/"+nameOf(m)] = m.Obj
	}
	return idx
}

func (idx objIndex) ofKind(kind string) []map[string]interface{} {
	var keys []string
	for k := range idx {
		if strings.HasPrefix(k, kind+"/") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []map[string]interface{}
	for _, k := range keys {
		out = append(out, idx[k])
	}
	return out
}

func cloneChart(c *Chart) *Chart {
	n := &Chart{Name: c.Name, Metadata: c.Metadata, Values: c.Values, Files: c.Files,
		Templates: map[string]string{}}
	for k, v := range c.Templates {
		n.Templates[k] = v
	}
	return n
}
