// Rendering a Helm chart the way Helm 3 does, with text/template and sprig: values.yaml
// coalesced with override files, .Release/.Chart/.Capabilities/.Files/.Template, and the
// functions Helm adds to sprig (include, tpl, required, toYaml, fromYaml, toJson, fromJson,
// lookup). Helm itself is not packaged for Debian 12; this is what the chart test uses.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	sprig "github.com/Masterminds/sprig"
	yaml "gopkg.in/yaml.v3"
)

// Chart is a chart read from disk: its metadata, default values, templates and other files.
type Chart struct {
	Name      string
	Metadata  map[string]interface{}
	Values    map[string]interface{}
	Templates map[string]string // path relative to the chart, e.g. templates/x.yaml
	Files     Files             // every other file, relative path -> content
}

// Files mirrors Helm's .Files (a map with Get, GetBytes, Glob, Lines).
type Files map[string][]byte

func (f Files) Get(name string) string      { return string(f[name]) }
func (f Files) GetBytes(name string) []byte { return f[name] }
func (f Files) Lines(name string) []string  { return strings.Split(string(f[name]), "\n") }
func (f Files) Glob(pattern string) Files {
	out := Files{}
	for k, v := range f {
		if ok, _ := path.Match(pattern, k); ok {
			out[k] = v
		}
	}
	return out
}

// LoadChart reads a chart directory.
func LoadChart(dir string) (*Chart, error) {
	c := &Chart{Templates: map[string]string{}, Files: Files{}}
	meta, err := readYAMLFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	c.Metadata = meta
	name, _ := meta["name"].(string)
	if name == "" {
		return nil, fmt.Errorf("Chart.yaml: no name")
	}
	c.Name = name
	vals, err := readYAMLFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		return nil, err
	}
	c.Values = vals
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(rel, "templates/") {
			c.Templates[rel] = string(data)
		} else {
			c.Files[rel] = data
		}
		return nil
	})
	return c, err
}

// readYAMLFile parses a YAML mapping and normalizes it through JSON, as Helm does
// (sigs.k8s.io/yaml): numbers become float64, maps map[string]interface{}.
func readYAMLFile(p string) (map[string]interface{}, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	m, err := parseYAMLMap(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	return m, nil
}

func parseYAMLMap(data []byte) (map[string]interface{}, error) {
	var raw interface{}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return map[string]interface{}{}, nil
	}
	norm, err := jsonNormalize(raw)
	if err != nil {
		return nil, err
	}
	m, ok := norm.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("not a mapping")
	}
	return m, nil
}

func jsonNormalize(v interface{}) (interface{}, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out interface{}
	err = json.Unmarshal(b, &out)
	return out, err
}

// Coalesce merges override into base the way Helm merges values files: maps merge
// recursively, anything else replaces, and null deletes the key.
func Coalesce(base, override map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range override {
		if v == nil {
			delete(out, k)
			continue
		}
		bm, ok1 := out[k].(map[string]interface{})
		om, ok2 := v.(map[string]interface{})
		if ok1 && ok2 {
			out[k] = Coalesce(bm, om)
		} else {
			out[k] = v
		}
	}
	return out
}

// Release is .Release.
type Release struct {
	Name      string
	Namespace string
}

func toYAML(v interface{}) string {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// Render renders every template that is not a partial (_*.tpl/_*) and returns the outputs
// by template path (as Helm names them: CHART/templates/x.yaml).
func Render(c *Chart, values map[string]interface{}, rel Release) (map[string]string, error) {
	top := map[string]interface{}{
		"Values": values,
		"Release": map[string]interface{}{
			"Name": rel.Name, "Namespace": rel.Namespace, "Service": "Helm",
			"IsInstall": true, "IsUpgrade": false, "Revision": 1,
		},
		"Chart":        chartObject(c.Metadata),
		"Files":        c.Files,
		"Capabilities": capabilities(),
	}
	root := template.New("gotpl")
	root.Option("missingkey=zero")
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	includedNames := map[string]int{}
	funcs["include"] = func(name string, data interface{}) (string, error) {
		if includedNames[name] > 100 {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
		includedNames[name]++
		defer func() { includedNames[name]-- }()
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return "", err
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return v, fmt.Errorf(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return v, fmt.Errorf(msg)
		}
		return v, nil
	}
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = func(s string) map[string]interface{} {
		m, err := parseYAMLMap([]byte(s))
		if err != nil {
			return map[string]interface{}{"Error": err.Error()}
		}
		return m
	}
	funcs["toJson"] = func(v interface{}) string {
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(b)
	}
	funcs["fromJson"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	// `helm template` and a first install see no cluster objects.
	funcs["lookup"] = func(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	root.Funcs(funcs)

	names := make([]string, 0, len(c.Templates))
	for p := range c.Templates {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		full := c.Name + "/" + p
		if _, err := root.New(full).Parse(c.Templates[p]); err != nil {
			return nil, fmt.Errorf("parse %s: %v", full, err)
		}
	}
	out := map[string]string{}
	for _, p := range names {
		base := path.Base(p)
		if strings.HasPrefix(base, "_") || !(strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml") || strings.HasSuffix(base, ".tpl") || strings.HasSuffix(base, ".txt")) {
			continue
		}
		if strings.HasSuffix(base, ".txt") { // NOTES.txt is not a manifest
			continue
		}
		full := c.Name + "/" + p
		vals := map[string]interface{}{}
		for k, v := range top {
			vals[k] = v
		}
		vals["Template"] = map[string]interface{}{"Name": full, "BasePath": c.Name + "/templates"}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, full, vals); err != nil {
			return nil, fmt.Errorf("render %s: %v", full, err)
		}
		out[full] = strings.ReplaceAll(buf.String(), "<no value>", "")
	}
	return out, nil
}

func chartObject(meta map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range meta {
		// Helm exposes Chart.yaml's fields capitalized (.Chart.Name, .Chart.AppVersion).
		out[strings.ToUpper(k[:1])+k[1:]] = v
	}
	return out
}

type apiVersions []string

func (a apiVersions) Has(v string) bool {
	for _, x := range a {
		if x == v {
			return true
		}
	}
	return false
}

func capabilities() map[string]interface{} {
	return map[string]interface{}{
		"KubeVersion": map[string]interface{}{"Version": "v1.30.0", "Major": "1", "Minor": "30",
			"GitVersion": "v1.30.0"},
		"APIVersions": apiVersions{"v1", "apps/v1", "policy/v1", "networking.k8s.io/v1",
			"monitoring.coreos.com/v1"},
	}
}

// SplitManifests splits rendered outputs into YAML documents (skipping empty ones) and
// parses each; the key is "template#index".
type Manifest struct {
	Source string
	Text   string
	Obj    map[string]interface{}
}

func ParseManifests(rendered map[string]string) ([]Manifest, error) {
	keys := make([]string, 0, len(rendered))
	for k := range rendered {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []Manifest
	for _, k := range keys {
		docs := splitDocs(rendered[k])
		for i, d := range docs {
			if strings.TrimSpace(stripComments(d)) == "" {
				continue
			}
			var raw interface{}
			dec := yaml.NewDecoder(strings.NewReader(d))
			dec.KnownFields(true)
			if err := dec.Decode(&raw); err != nil {
				return nil, fmt.Errorf("%s document %d: invalid YAML: %v\n%s", k, i, err, numbered(d))
			}
			norm, err := jsonNormalize(raw)
			if err != nil {
				return nil, fmt.Errorf("%s document %d: %v", k, i, err)
			}
			m, ok := norm.(map[string]interface{})
			if !ok {
				return nil, fmt.Errorf("%s document %d: not a mapping", k, i)
			}
			out = append(out, Manifest{Source: fmt.Sprintf("%s#%d", k, i), Text: d, Obj: m})
		}
	}
	return out, nil
}

func splitDocs(s string) []string {
	var docs []string
	var cur []string
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimRight(line, " \t") == "---" || strings.HasPrefix(line, "--- ") {
			docs = append(docs, strings.Join(cur, "\n"))
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	docs = append(docs, strings.Join(cur, "\n"))
	return docs
}

func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		b.WriteString(line)
		b.WriteString("\n")
	}
	return b.String()
}

func numbered(s string) string {
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		fmt.Fprintf(&b, "%4d | %s\n", i+1, line)
	}
	return b.String()
}
