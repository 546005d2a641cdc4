// Validation of rendered Kubernetes objects: required fields per kind, and the references
// between objects (selectors and labels, named ports, Secrets, ConfigMaps, volumes,
// Services the flags name), plus the chart's own rules (gRPC probes, GPU limits on workers,
// termination grace matching the drain, NetworkPolicies letting only the coordinator reach
// the workers and the internal services).
package main

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var (
	dns1123Label     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	envRef           = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
)

var knownKinds = map[string]string{
	"ServiceAccount":      "v1",
	"Service":             "v1",
	"Secret":              "v1",
	"ConfigMap":           "v1",
	"Deployment":          "apps/v1",
	"StatefulSet":         "apps/v1",
	"PodDisruptionBudget": "policy/v1",
	"NetworkPolicy":       "networking.k8s.io/v1",
	"ServiceMonitor":      "monitoring.coreos.com/v1",
	"PrometheusRule":      "monitoring.coreos.com/v1",
}

// internal components that only the coordinator may call over gRPC.
var coordinatorOnly = []string{"judge", "analyzer", "orchestrator", "optimization-manager", "worker"}

// Options of one validation.
type ValidateOptions struct {
	ExternalSecrets    map[string]bool // Secrets the values say exist outside the chart
	ExternalConfigMaps map[string]bool
	DashboardLabel     string // label key Grafana's sidecar selects on
	DashboardValue     string
}

type workload struct {
	m      Manifest
	kind   string
	name   string
	labels map[string]string // pod template labels
	spec   map[string]interface{}
	pod    map[string]interface{}
}

type validator struct {
	opts      ValidateOptions
	objs      []Manifest
	errs      []string
	workloads []*workload
	services  map[string]Manifest
	secrets   map[string]map[string]bool // name -> keys
	configmap map[string]map[string]bool
}

func (v *validator) fail(m Manifest, format string, args ...interface{}) {
	v.errs = append(v.errs, fmt.Sprintf("%s %s/%s (%s): %s", kindOf(m), "", nameOf(m), m.Source,
		fmt.Sprintf(format, args...)))
}

func kindOf(m Manifest) string { return str(m.Obj["kind"]) }
func nameOf(m Manifest) string { return str(get(m.Obj, "metadata", "name")) }

// Validate checks every object and returns the problems found (empty: valid).
func Validate(objs []Manifest, opts ValidateOptions) []string {
	v := &validator{opts: opts, objs: objs, services: map[string]Manifest{},
		secrets: map[string]map[string]bool{}, configmap: map[string]map[string]bool{}}
	seen := map[string]string{}
	for _, m := range objs {
		kind, api := str(m.Obj["apiVersion"]), kindOf(m)
		_ = kind
		want, known := knownKinds[api]
		if api == "" {
			v.fail(m, "no kind")
			continue
		}
		if !known {
			v.fail(m, "unexpected kind %q", api)
			continue
		}
		if str(m.Obj["apiVersion"]) != want {
			v.fail(m, "apiVersion %q, want %q", str(m.Obj["apiVersion"]), want)
		}
		name := nameOf(m)
		if name == "" {
			v.fail(m, "no metadata.name")
			continue
		}
		if len(name) > 253 || !dns1123Subdomain.MatchString(name) {
			v.fail(m, "metadata.name %q is not a DNS-1123 subdomain", name)
		}
		if (api == "Service" || api == "StatefulSet" || api == "Deployment") && (len(name) > 63 || !dns1123Label.MatchString(name)) {
			v.fail(m, "metadata.name %q is not a DNS-1123 label of at most 63 characters", name)
		}
		if api == "StatefulSet" && len(name) > 52 {
			v.fail(m, "StatefulSet name %q longer than 52 characters (the controller-revision label overflows)", name)
		}
		key := api + "/" + name
		if prev, dup := seen[key]; dup {
			v.fail(m, "duplicate %s (also in %s)", key, prev)
		}
		seen[key] = m.Source
		labels := strMap(get(m.Obj, "metadata", "labels"))
		for _, l := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by"} {
			if labels[l] == "" {
				v.fail(m, "missing label %s", l)
			}
		}
		for k, val := range labels {
			if len(val) > 63 {
				v.fail(m, "label %s value longer than 63 characters", k)
			}
		}
		if strings.Contains(m.Text, "<no value>") || strings.Contains(m.Text, "%!") {
			v.fail(m, "rendered text contains <no value> or a format error")
		}
		switch api {
		case "Service":
			v.services[name] = m
		case "Secret":
			keys := map[string]bool{}
			for k, val := range mapOf(m.Obj["data"]) {
				keys[k] = true
				if _, err := decodeBase64(str(val)); err != nil {
					v.fail(m, "data.%s is not base64: %v", k, err)
				}
			}
			for k := range mapOf(m.Obj["stringData"]) {
				keys[k] = true
			}
			if len(keys) == 0 {
				v.fail(m, "Secret without data")
			}
			v.secrets[name] = keys
		case "ConfigMap":
			keys := map[string]bool{}
			for k := range mapOf(m.Obj["data"]) {
				keys[k] = true
			}
			v.configmap[name] = keys
		case "Deployment", "StatefulSet":
			spec := mapOf(m.Obj["spec"])
			pod := mapOf(get(spec, "template", "spec"))
			w := &workload{m: m, kind: api, name: name, spec: spec, pod: pod,
				labels: strMap(get(spec, "template", "metadata", "labels"))}
			v.workloads = append(v.workloads, w)
		}
	}
	for _, w := range v.workloads {
		v.checkWorkload(w)
	}
	for _, m := range objs {
		switch kindOf(m) {
		case "Service":
			v.checkService(m)
		case "PodDisruptionBudget":
			v.checkPDB(m)
		case "NetworkPolicy":
			v.checkNetworkPolicy(m)
		case "ServiceMonitor":
			v.checkServiceMonitor(m)
		case "PrometheusRule":
			v.checkPrometheusRule(m)
		case "ConfigMap":
			v.checkConfigMap(m)
		}
	}
	v.checkCoordinatorOnly()
	sort.Strings(v.errs)
	return v.errs
}

func (v *validator) podsMatching(sel map[string]string) []*workload {
	var out []*workload
	if len(sel) == 0 {
		return out
	}
	for _, w := range v.workloads {
		if subset(sel, w.labels) {
			out = append(out, w)
		}
	}
	return out
}

func subset(sel, labels map[string]string) bool {
	for k, val := range sel {
		if labels[k] != val {
			return false
		}
	}
	return true
}

// containerPorts: name -> number and the set of numbers over every container of a pod.
func containerPorts(pod map[string]interface{}) (map[string]int, map[int]bool) {
	names, nums := map[string]int{}, map[int]bool{}
	for _, c := range list(pod["containers"]) {
		for _, p := range list(mapOf(c)["ports"]) {
			pm := mapOf(p)
			n := num(pm["containerPort"])
			nums[n] = true
			if s := str(pm["name"]); s != "" {
				names[s] = n
			}
		}
	}
	return names, nums
}

func portExists(pod map[string]interface{}, port interface{}) bool {
	names, nums := containerPorts(pod)
	if s, ok := port.(string); ok {
		if n, err := strconv.Atoi(s); err == nil {
			return nums[n]
		}
		_, ok := names[s]
		return ok
	}
	return nums[num(port)]
}

func (v *validator) secretKeyExists(name, key string) bool {
	if v.opts.ExternalSecrets[name] {
		return true
	}
	keys, ok := v.secrets[name]
	return ok && (key == "" || keys[key])
}

func (v *validator) checkWorkload(w *workload) {
	m := w.m
	sel := strMap(get(w.spec, "selector", "matchLabels"))
	if len(sel) == 0 {
		v.fail(m, "spec.selector.matchLabels is empty")
	} else if !subset(sel, w.labels) {
		v.fail(m, "selector %v does not match the pod template labels %v", sel, w.labels)
	}
	for _, other := range v.workloads {
		if other != w && len(sel) > 0 && subset(sel, other.labels) {
			v.fail(m, "selector %v also selects the pods of %s", sel, other.name)
		}
	}
	if _, ok := w.spec["replicas"]; ok && num(w.spec["replicas"]) < 0 {
		v.fail(m, "negative replicas")
	}
	component := w.labels["app.kubernetes.io/component"]
	if component == "" {
		v.fail(m, "pod template without app.kubernetes.io/component")
	}
	pod := w.pod
	containers := list(pod["containers"])
	if len(containers) == 0 {
		v.fail(m, "no containers")
		return
	}
	// Volumes and claims.
	volumes := map[string]bool{}
	for _, vol := range list(pod["volumes"]) {
		vm := mapOf(vol)
		name := str(vm["name"])
		if volumes[name] {
			v.fail(m, "duplicate volume %q", name)
		}
		volumes[name] = true
		if s := mapOf(vm["secret"]); s != nil {
			if !v.secretKeyExists(str(s["secretName"]), "") {
				v.fail(m, "volume %q names Secret %q, which is neither rendered nor declared external", name, str(s["secretName"]))
			}
		}
		if cm := mapOf(vm["configMap"]); cm != nil {
			if _, ok := v.configmap[str(cm["name"])]; !ok && !v.opts.ExternalConfigMaps[str(cm["name"])] {
				v.fail(m, "volume %q names ConfigMap %q, which is not rendered", name, str(cm["name"]))
			}
		}
	}
	for _, t := range list(w.spec["volumeClaimTemplates"]) {
		tm := mapOf(t)
		name := str(get(tm, "metadata", "name"))
		volumes[name] = true
		if str(get(tm, "spec", "resources", "requests", "storage")) == "" {
			v.fail(m, "volumeClaimTemplate %q without a storage request", name)
		}
		if len(list(get(tm, "spec", "accessModes"))) == 0 {
			v.fail(m, "volumeClaimTemplate %q without accessModes", name)
		}
	}
	podNonRoot := boolOf(get(pod, "securityContext", "runAsNonRoot"))
	tgps := num(pod["terminationGracePeriodSeconds"])
	for _, c := range containers {
		cm := mapOf(c)
		cname := str(cm["name"])
		where := fmt.Sprintf("container %q", cname)
		if cname == "" || !dns1123Label.MatchString(cname) {
			v.fail(m, "%s: bad container name", where)
		}
		image := str(cm["image"])
		if image == "" || strings.ContainsAny(image, " \t") || strings.HasSuffix(image, ":") ||
			!strings.Contains(path.Base(image), ":") {
			v.fail(m, "%s: image %q must be REPOSITORY:TAG", where, image)
		}
		if !podNonRoot && !boolOf(get(cm, "securityContext", "runAsNonRoot")) {
			v.fail(m, "%s: runAsNonRoot is not set", where)
		}
		if boolOf(get(cm, "securityContext", "privileged")) {
			v.fail(m, "%s: privileged", where)
		}
		// Ports.
		names, nums := containerPorts(map[string]interface{}{"containers": []interface{}{c}})
		for _, want := range []string{"grpc", "metrics"} {
			if _, ok := names[want]; !ok {
				v.fail(m, "%s: no port named %q", where, want)
			}
		}
		// Environment (and $(VAR) references in args).
		env := map[string]bool{}
		for _, e := range list(cm["env"]) {
			em := mapOf(e)
			env[str(em["name"])] = true
			if ref := mapOf(get(em, "valueFrom", "secretKeyRef")); ref != nil {
				if !v.secretKeyExists(str(ref["name"]), str(ref["key"])) {
					v.fail(m, "%s: env %s reads Secret %s key %s, which is not rendered", where, str(em["name"]), str(ref["name"]), str(ref["key"]))
				}
			}
			if ref := mapOf(get(em, "valueFrom", "configMapKeyRef")); ref != nil {
				if keys, ok := v.configmap[str(ref["name"])]; !ok || !keys[str(ref["key"])] {
					v.fail(m, "%s: env %s reads a ConfigMap key that is not rendered", where, str(em["name"]))
				}
			}
		}
		for _, e := range list(cm["envFrom"]) {
			if ref := mapOf(mapOf(e)["secretRef"]); ref != nil && !v.secretKeyExists(str(ref["name"]), "") {
				v.fail(m, "%s: envFrom Secret %q is not rendered", where, str(ref["name"]))
			}
		}
		args := strList(cm["args"])
		flags := map[string]string{}
		for _, a := range args {
			for _, ref := range envRef.FindAllStringSubmatch(a, -1) {
				if !env[ref[1]] {
					v.fail(m, "%s: argument %q refers to $(%s), which is not in env", where, a, ref[1])
				}
			}
			if strings.HasPrefix(a, "--") {
				kv := strings.SplitN(a[2:], "=", 2)
				if len(kv) == 2 {
					flags[kv[0]] = kv[1]
				} else {
					flags[kv[0]] = "true" // a boolean flag given bare
				}
			}
		}
		if len(strList(cm["command"])) == 0 {
			v.fail(m, "%s: no command", where)
		}
		for _, f := range []string{"listen", "metrics-listen", "drain-seconds", "shutdown-grace-seconds"} {
			if flags[f] == "" {
				v.fail(m, "%s: no --%s", where, f)
			}
		}
		for _, f := range []string{"listen", "metrics-listen"} {
			if a := flags[f]; a != "" {
				i := strings.LastIndex(a, ":")
				p, err := strconv.Atoi(a[i+1:])
				if i < 0 || err != nil || !nums[p] {
					v.fail(m, "%s: --%s=%s is not on a declared container port", where, f, a)
				}
			}
		}
		if tf := flags["tokens-file"]; tf != "" && !mountedAt(cm, tf) {
			v.fail(m, "%s: --tokens-file=%s is not under a volume mount", where, tf)
		}
		// Volume mounts.
		for _, vm := range list(cm["volumeMounts"]) {
			n := str(mapOf(vm)["name"])
			if !volumes[n] {
				v.fail(m, "%s: volumeMount %q has no volume", where, n)
			}
		}
		// Probes: gRPC liveness on kagent.liveness, readiness on "".
		for _, p := range []struct {
			key, service string
			required     bool
		}{{"livenessProbe", "kagent.liveness", true}, {"readinessProbe", "", true}, {"startupProbe", "kagent.liveness", false}} {
			probe := mapOf(cm[p.key])
			if probe == nil {
				if p.required {
					v.fail(m, "%s: no %s", where, p.key)
				}
				continue
			}
			g := mapOf(probe["grpc"])
			if g == nil {
				v.fail(m, "%s: %s is not a gRPC probe", where, p.key)
				continue
			}
			if !nums[num(g["port"])] {
				v.fail(m, "%s: %s port %v is not a container port", where, p.key, g["port"])
			} else if names["grpc"] != num(g["port"]) {
				v.fail(m, "%s: %s probes port %v, not the grpc port %d", where, p.key, g["port"], names["grpc"])
			}
			if str(g["service"]) != p.service {
				v.fail(m, "%s: %s checks service %q, want %q", where, p.key, str(g["service"]), p.service)
			}
		}
		// Requests.
		req := mapOf(get(cm, "resources", "requests"))
		if str(req["cpu"]) == "" || str(req["memory"]) == "" {
			v.fail(m, "%s: needs cpu and memory requests", where)
		}
		// Shutdown: preStop sleep + drain + grace <= terminationGracePeriodSeconds.
		sleep := strList(get(cm, "lifecycle", "preStop", "exec", "command"))
		if len(sleep) != 2 || sleep[0] != "sleep" {
			v.fail(m, "%s: preStop must be [sleep, N], got %v", where, sleep)
		} else {
			s, err1 := strconv.Atoi(sleep[1])
			d, err2 := strconv.Atoi(flags["drain-seconds"])
			g, err3 := strconv.Atoi(flags["shutdown-grace-seconds"])
			if err1 != nil || err2 != nil || err3 != nil {
				v.fail(m, "%s: preStop/drain/grace seconds are not integers", where)
			} else if need := s + d + g; tgps < need || tgps > need+60 {
				v.fail(m, "terminationGracePeriodSeconds %d does not match preStop %d + drain %d + grace %d (+ at most 60)", tgps, s, d, g)
			}
		}
		// Component rules.
		switch component {
		case "worker":
			v.checkWorker(w, cm, flags, env)
		case "coordinator":
			v.checkCoordinator(w, cm, flags, env)
		}
	}
}

func mountedAt(c map[string]interface{}, file string) bool {
	for _, vm := range list(c["volumeMounts"]) {
		mp := strings.TrimSuffix(str(mapOf(vm)["mountPath"]), "/")
		if mp != "" && strings.HasPrefix(file, mp+"/") {
			return true
		}
	}
	return false
}

// serviceAddress checks that host:port names a rendered Service port whose pods exist.
func (v *validator) serviceAddress(m Manifest, flag, addr, wantComponent string) {
	i := strings.LastIndex(addr, ":")
	if i <= 0 {
		v.fail(m, "--%s=%q is not host:port", flag, addr)
		return
	}
	host, port := addr[:i], addr[i+1:]
	host = strings.SplitN(host, ".", 2)[0]
	svc, ok := v.services[host]
	if !ok {
		v.fail(m, "--%s=%s: no Service %q is rendered", flag, addr, host)
		return
	}
	p, _ := strconv.Atoi(port)
	found := false
	for _, sp := range list(get(svc.Obj, "spec", "ports")) {
		if num(mapOf(sp)["port"]) == p {
			found = true
		}
	}
	if !found {
		v.fail(m, "--%s=%s: Service %s has no port %s", flag, addr, host, port)
	}
	pods := v.podsMatching(strMap(get(svc.Obj, "spec", "selector")))
	if len(pods) == 0 {
		v.fail(m, "--%s=%s: Service %s selects no pods", flag, addr, host)
	}
	for _, w := range pods {
		if w.labels["app.kubernetes.io/component"] != wantComponent {
			v.fail(m, "--%s=%s: Service %s selects %s pods, want %s", flag, addr, host, w.labels["app.kubernetes.io/component"], wantComponent)
		}
	}
}

// statefulPodAddress checks an address of the form POD.SERVICE:PORT that names pod
// NAME-i of a rendered StatefulSet NAME governed by headless Service SERVICE (i below its
// replicas, the port one of that Service's). False when addr is not of that form (the
// caller checks it as a Service address).
func (v *validator) statefulPodAddress(m Manifest, flag, addr, wantComponent string) bool {
	i := strings.LastIndex(addr, ":")
	if i <= 0 {
		return false
	}
	labels := strings.Split(addr[:i], ".")
	if len(labels) < 2 {
		return false
	}
	pod, svcName := labels[0], labels[1]
	dash := strings.LastIndex(pod, "-")
	if dash <= 0 {
		return false
	}
	ordinal, err := strconv.Atoi(pod[dash+1:])
	if err != nil {
		return false
	}
	for _, w := range v.workloads {
		if w.kind != "StatefulSet" || w.name != pod[:dash] || str(w.spec["serviceName"]) != svcName {
			continue
		}
		if ordinal >= int(num(w.spec["replicas"])) {
			v.fail(m, "--%s=%s: StatefulSet %s has %v replicas, no pod %d", flag, addr, w.name,
				w.spec["replicas"], ordinal)
		}
		if w.labels["app.kubernetes.io/component"] != wantComponent {
			v.fail(m, "--%s=%s: pod of %s, want a %s", flag, addr, w.labels["app.kubernetes.io/component"], wantComponent)
		}
		v.serviceAddress(m, flag, svcName+":"+addr[i+1:], wantComponent)
		return true
	}
	return false
}

func (v *validator) checkWorker(w *workload, c map[string]interface{}, flags map[string]string, env map[string]bool) {
	m := w.m
	if flags["coordinator"] == "" {
		v.fail(m, "worker without --coordinator")
	} else {
		for _, addr := range strings.Split(flags["coordinator"], ",") {
			if !v.statefulPodAddress(m, "coordinator", addr, "coordinator") {
				v.serviceAddress(m, "coordinator", addr, "coordinator")
			}
		}
	}
	if !strings.HasPrefix(flags["advertise"], "$(POD_IP):") {
		v.fail(m, "worker --advertise=%q should be $(POD_IP):PORT", flags["advertise"])
	}
	if flags["device"] == "cuda" {
		limits := mapOf(get(c, "resources", "limits"))
		if num(limits["nvidia.com/gpu"]) != 1 {
			v.fail(m, "GPU worker must limit nvidia.com/gpu to 1, got %v", limits["nvidia.com/gpu"])
		}
		if r, ok := mapOf(get(c, "resources", "requests"))["nvidia.com/gpu"]; ok && num(r) != 1 {
			v.fail(m, "GPU worker requests nvidia.com/gpu %v", r)
		}
		if len(mapOf(w.pod["nodeSelector"])) == 0 {
			v.fail(m, "GPU worker without a nodeSelector")
		}
		if len(list(w.pod["tolerations"])) == 0 {
			v.fail(m, "GPU worker without tolerations")
		}
		if flags["cupti-lib"] == "" {
			v.fail(m, "GPU worker without --cupti-lib")
		}
	}
	if flags["worker-id"] == "" {
		v.fail(m, "worker without --worker-id")
	}
	if !mountedAt(c, "/dev/shm/x") {
		v.fail(m, "worker without a /dev/shm volume")
	}
}

func (v *validator) checkCoordinator(w *workload, c map[string]interface{}, flags map[string]string, env map[string]bool) {
	m := w.m
	if w.kind != "StatefulSet" {
		v.fail(m, "the coordinator must be a StatefulSet")
	}
	// One replica, or several electing a leader on PostgreSQL (the replicas forward writes
	// to the leader at its pod IP).
	if flags["leader-election"] == "true" {
		if strings.HasPrefix(flags["db"], "sqlite:") || !env["KAGENT_DB"] {
			v.fail(m, "--leader-election needs PostgreSQL (KAGENT_DB), not %q", flags["db"])
		}
		if !strings.HasPrefix(flags["advertise"], "$(POD_IP):") {
			v.fail(m, "coordinator --advertise=%q should be $(POD_IP):PORT", flags["advertise"])
		}
		if num(w.spec["replicas"]) < 1 {
			v.fail(m, "the coordinator has %v replicas", w.spec["replicas"])
		}
	} else if num(w.spec["replicas"]) != 1 {
		v.fail(m, "the coordinator must have exactly 1 replica unless it runs --leader-election")
	}
	sn := str(w.spec["serviceName"])
	if svc, ok := v.services[sn]; !ok {
		v.fail(m, "serviceName %q is not a rendered Service", sn)
	} else if str(get(svc.Obj, "spec", "clusterIP")) != "None" {
		v.fail(m, "serviceName %q is not headless", sn)
	}
	for flag, comp := range map[string]string{"judge": "judge", "analyzer": "analyzer",
		"orchestrator": "orchestrator", "optimization-manager": "optimization-manager"} {
		if flags[flag] == "" {
			v.fail(m, "coordinator without --%s", flag)
		} else {
			v.serviceAddress(m, flag, flags[flag], comp)
		}
	}
	db := flags["db"]
	claims := list(w.spec["volumeClaimTemplates"])
	switch {
	case strings.HasPrefix(db, "sqlite:"):
		p := strings.TrimPrefix(db, "sqlite:")
		if !strings.HasPrefix(p, "/") {
			v.fail(m, "--db=%s: the SQLite path must be absolute", db)
		}
		onClaim := false
		for _, vm := range list(c["volumeMounts"]) {
			vmm := mapOf(vm)
			if str(vmm["mountPath"]) == path.Dir(p) {
				for _, t := range claims {
					if str(get(mapOf(t), "metadata", "name")) == str(vmm["name"]) {
						onClaim = true
					}
				}
			}
		}
		if !onClaim {
			v.fail(m, "--db=%s: the database directory is not a mounted volumeClaimTemplate", db)
		}
	case db == "":
		if !env["KAGENT_DB"] {
			v.fail(m, "coordinator has neither --db nor KAGENT_DB")
		}
		if len(claims) > 0 {
			v.fail(m, "coordinator on PostgreSQL still claims a volume")
		}
	default:
		v.fail(m, "--db=%s: put a PostgreSQL URL in a Secret, not in args", db)
	}
}

func (v *validator) checkService(m Manifest) {
	spec := mapOf(m.Obj["spec"])
	sel := strMap(spec["selector"])
	pods := v.podsMatching(sel)
	if len(sel) == 0 {
		v.fail(m, "Service without a selector")
		return
	}
	if len(pods) == 0 {
		v.fail(m, "selector %v matches no pod template", sel)
	}
	ports := list(spec["ports"])
	if len(ports) == 0 {
		v.fail(m, "no ports")
	}
	for _, p := range ports {
		pm := mapOf(p)
		if str(pm["name"]) == "" && len(ports) > 1 {
			v.fail(m, "unnamed port in a multi-port Service")
		}
		tp := pm["targetPort"]
		if tp == nil {
			tp = pm["port"]
		}
		for _, w := range pods {
			if !portExists(w.pod, tp) {
				v.fail(m, "targetPort %v does not exist on the pods of %s", tp, w.name)
			}
		}
	}
}

func (v *validator) checkPDB(m Manifest) {
	spec := mapOf(m.Obj["spec"])
	_, hasMin := spec["minAvailable"]
	_, hasMax := spec["maxUnavailable"]
	if hasMin == hasMax {
		v.fail(m, "needs exactly one of minAvailable and maxUnavailable")
	}
	sel := strMap(get(spec, "selector", "matchLabels"))
	pods := v.podsMatching(sel)
	if len(pods) != 1 {
		v.fail(m, "selector %v matches %d workloads, want 1", sel, len(pods))
	}
}

// peerMatches: which workloads an ingress peer admits (nil + true: everyone outside too).
func (v *validator) peerWorkloads(peer map[string]interface{}) ([]*workload, bool) {
	if peer["ipBlock"] != nil || peer["namespaceSelector"] != nil {
		return nil, true
	}
	ps := mapOf(peer["podSelector"])
	if ps == nil {
		return nil, true
	}
	sel := strMap(ps["matchLabels"])
	if len(sel) == 0 || ps["matchExpressions"] != nil {
		return nil, true // every pod of the namespace
	}
	return v.podsMatching(sel), false
}

func (v *validator) checkNetworkPolicy(m Manifest) {
	spec := mapOf(m.Obj["spec"])
	sel := strMap(get(spec, "podSelector", "matchLabels"))
	pods := v.podsMatching(sel)
	if len(pods) == 0 {
		v.fail(m, "podSelector %v matches no pod template", sel)
	}
	if len(strList(spec["policyTypes"])) == 0 {
		v.fail(m, "no policyTypes")
	}
	for _, r := range list(spec["ingress"]) {
		rm := mapOf(r)
		for _, p := range list(rm["ports"]) {
			port := mapOf(p)["port"]
			for _, w := range pods {
				if !portExists(w.pod, port) {
					v.fail(m, "ingress port %v does not exist on the pods of %s", port, w.name)
				}
			}
		}
		for _, peer := range list(rm["from"]) {
			ws, everyone := v.peerWorkloads(mapOf(peer))
			if !everyone && len(ws) == 0 {
				v.fail(m, "ingress peer %v matches no pod template", peer)
			}
		}
	}
}

// checkCoordinatorOnly: when NetworkPolicies are rendered, each internal component's gRPC
// port admits the coordinator's pods and nothing else.
func (v *validator) checkCoordinatorOnly() {
	var policies []Manifest
	for _, m := range v.objs {
		if kindOf(m) == "NetworkPolicy" {
			policies = append(policies, m)
		}
	}
	if len(policies) == 0 {
		return
	}
	for _, w := range v.workloads {
		comp := w.labels["app.kubernetes.io/component"]
		if !contains(coordinatorOnly, comp) {
			continue
		}
		names, _ := containerPorts(w.pod)
		grpcPort := names["grpc"]
		selected := false
		coordinatorAdmitted := false
		for _, p := range policies {
			spec := mapOf(p.Obj["spec"])
			if !subset(strMap(get(spec, "podSelector", "matchLabels")), w.labels) || len(strMap(get(spec, "podSelector", "matchLabels"))) == 0 {
				continue
			}
			if !contains(strList(spec["policyTypes"]), "Ingress") {
				continue
			}
			selected = true
			for _, r := range list(spec["ingress"]) {
				rm := mapOf(r)
				covers := len(list(rm["ports"])) == 0
				for _, pp := range list(rm["ports"]) {
					port := mapOf(pp)["port"]
					if s, ok := port.(string); ok {
						if names[s] == grpcPort {
							covers = true
						}
					} else if num(port) == grpcPort {
						covers = true
					}
				}
				if !covers {
					continue
				}
				from := list(rm["from"])
				if len(from) == 0 {
					v.fail(w.m, "NetworkPolicy %s lets everyone reach the %s gRPC port", nameOf(p), comp)
				}
				for _, peer := range from {
					ws, everyone := v.peerWorkloads(mapOf(peer))
					if everyone {
						v.fail(w.m, "NetworkPolicy %s lets a namespace, IP block or every pod reach the %s gRPC port", nameOf(p), comp)
					}
					for _, o := range ws {
						if o.labels["app.kubernetes.io/component"] != "coordinator" {
							v.fail(w.m, "NetworkPolicy %s lets %s reach the %s gRPC port", nameOf(p), o.name, comp)
						} else {
							coordinatorAdmitted = true
						}
					}
				}
			}
		}
		if !selected {
			v.fail(w.m, "no NetworkPolicy selects the %s pods", comp)
		} else if !coordinatorAdmitted {
			v.fail(w.m, "no NetworkPolicy lets the coordinator reach the %s gRPC port", comp)
		}
	}
}

func (v *validator) checkServiceMonitor(m Manifest) {
	spec := mapOf(m.Obj["spec"])
	sel := strMap(get(spec, "selector", "matchLabels"))
	var matched []Manifest
	for _, s := range v.services {
		if len(sel) > 0 && subset(sel, strMap(get(s.Obj, "metadata", "labels"))) {
			matched = append(matched, s)
		}
	}
	if len(matched) == 0 {
		v.fail(m, "selector %v matches no Service", sel)
	}
	eps := list(spec["endpoints"])
	if len(eps) == 0 {
		v.fail(m, "no endpoints")
	}
	for _, e := range eps {
		port := str(mapOf(e)["port"])
		for _, s := range matched {
			found := false
			for _, sp := range list(get(s.Obj, "spec", "ports")) {
				if str(mapOf(sp)["name"]) == port {
					found = true
				}
			}
			if !found {
				v.fail(m, "endpoint port %q is not a port of Service %s", port, nameOf(s))
			}
		}
	}
}

func (v *validator) checkPrometheusRule(m Manifest) {
	groups := list(get(m.Obj, "spec", "groups"))
	if len(groups) == 0 {
		v.fail(m, "no rule groups")
	}
	for _, g := range groups {
		gm := mapOf(g)
		if str(gm["name"]) == "" {
			v.fail(m, "rule group without a name")
		}
		rules := list(gm["rules"])
		if len(rules) == 0 {
			v.fail(m, "rule group %s has no rules", str(gm["name"]))
		}
		for _, r := range rules {
			rm := mapOf(r)
			if str(rm["expr"]) == "" || (str(rm["alert"]) == "") == (str(rm["record"]) == "") {
				v.fail(m, "rule %v needs expr and exactly one of alert and record", rm)
			}
		}
	}
}

func (v *validator) checkConfigMap(m Manifest) {
	labels := strMap(get(m.Obj, "metadata", "labels"))
	if labels["app.kubernetes.io/component"] != "dashboards" {
		return
	}
	if v.opts.DashboardLabel != "" && labels[v.opts.DashboardLabel] != v.opts.DashboardValue {
		v.fail(m, "dashboard ConfigMap without label %s=%s", v.opts.DashboardLabel, v.opts.DashboardValue)
	}
	data := mapOf(m.Obj["data"])
	if len(data) != 1 {
		v.fail(m, "a dashboard ConfigMap holds one dashboard, has %d keys", len(data))
	}
	for k, val := range data {
		var d map[string]interface{}
		if err := json.Unmarshal([]byte(str(val)), &d); err != nil {
			v.fail(m, "%s is not JSON: %v", k, err)
			continue
		}
		if str(d["title"]) == "" || str(d["uid"]) == "" || len(list(d["panels"])) == 0 {
			v.fail(m, "%s: a dashboard needs title, uid and panels", k)
		}
	}
}

// --- small helpers over decoded JSON ---

func get(v interface{}, keys ...string) interface{} {
	for _, k := range keys {
		m, ok := v.(map[string]interface{})
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func mapOf(v interface{}) map[string]interface{} {
	m, _ := v.(map[string]interface{})
	return m
}

func list(v interface{}) []interface{} {
	l, _ := v.([]interface{})
	return l
}

func str(v interface{}) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

func num(v interface{}) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case string:
		n, err := strconv.Atoi(x)
		if err == nil {
			return n
		}
	}
	return -1
}

func boolOf(v interface{}) bool { b, _ := v.(bool); return b }

func strMap(v interface{}) map[string]string {
	out := map[string]string{}
	for k, val := range mapOf(v) {
		out[k] = str(val)
	}
	return out
}

func strList(v interface{}) []string {
	var out []string
	for _, x := range list(v) {
		out = append(out, str(x))
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
