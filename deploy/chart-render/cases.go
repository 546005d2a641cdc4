// The chart test's value sets (testdata/*.yaml) with what each must render, and the
// mutations of the chart that the validation must catch.
package main

import (
	"fmt"
	"strings"
)

type testCase struct {
	name      string
	files     []string
	wantError string // the render must fail with this
	expect    func(objIndex) []string
}

const fullname = "kagent" // release "kagent", chart "kagent"

func firstContainer(obj map[string]interface{}) map[string]interface{} {
	cs := list(get(obj, "spec", "template", "spec", "containers"))
	if len(cs) == 0 {
		return nil
	}
	return mapOf(cs[0])
}

func hasArg(c map[string]interface{}, prefix string) bool {
	for _, a := range strList(c["args"]) {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

func envVar(c map[string]interface{}, name string) map[string]interface{} {
	for _, e := range list(c["env"]) {
		if str(mapOf(e)["name"]) == name {
			return mapOf(e)
		}
	}
	return nil
}

type expectations struct{ problems []string }

func (e *expectations) want(ok bool, format string, args ...interface{}) {
	if !ok {
		e.problems = append(e.problems, fmt.Sprintf(format, args...))
	}
}

func workloadsOf(idx objIndex) []map[string]interface{} {
	return append(idx.ofKind("Deployment"), idx.ofKind("StatefulSet")...)
}

var cases = []testCase{
	{
		name: "default",
		expect: func(idx objIndex) []string {
			e := &expectations{}
			sts := idx["StatefulSet/"+fullname+"-coordinator"]
			e.want(sts != nil, "no coordinator StatefulSet")
			c := firstContainer(sts)
			e.want(hasArg(c, "--db=sqlite:/var/lib/kagent/kagent.db"), "coordinator not on SQLite: %v", c["args"])
			e.want(len(list(get(sts, "spec", "volumeClaimTemplates"))) == 1, "coordinator without a PVC template")
			for _, n := range []string{"judge", "analyzer", "orchestrator", "optimization-manager", "worker-h200", "worker-h100"} {
				d := idx["Deployment/"+fullname+"-"+n]
				e.want(d != nil, "no Deployment %s", n)
				e.want(len(mapOf(get(firstContainer(d), "resources", "requests"))) > 0, "%s without requests", n)
			}
			w := idx["Deployment/"+fullname+"-worker-h200"]
			e.want(str(get(w, "spec", "template", "spec", "nodeSelector", "nvidia.com/gpu.product")) == "NVIDIA-H200", "h200 pool nodeSelector")
			e.want(num(get(w, "spec", "replicas")) == 1, "h200 pool replicas")
			e.want(num(get(idx["Deployment/"+fullname+"-worker-h100"], "spec", "replicas")) == 0, "h100 pool replicas")
			// The worker runs as uid 10001 with the sandbox required, and the pod gives bwrap
			// what it needs to build the candidate's namespaces.
			wc := firstContainer(w)
			sc := mapOf(wc["securityContext"])
			e.want(boolOf(sc["runAsNonRoot"]) && num(sc["runAsUser"]) == 10001 && num(sc["runAsGroup"]) == 10001,
				"worker not non-root 10001: %v", sc)
			e.want(sc["allowPrivilegeEscalation"] == false, "worker may escalate privileges")
			e.want(fmt.Sprint(get(sc, "capabilities", "drop")) == "[ALL]" && get(sc, "capabilities", "add") == nil,
				"worker capabilities %v", sc["capabilities"])
			e.want(str(get(sc, "seccompProfile", "type")) == "Unconfined", "worker seccomp %v", sc["seccompProfile"])
			e.want(str(get(sc, "appArmorProfile", "type")) == "Unconfined", "worker AppArmor %v", sc["appArmorProfile"])
			e.want(str(sc["procMount"]) == "Unmasked", "worker procMount %v", sc["procMount"])
			e.want(get(w, "spec", "template", "spec", "hostUsers") == false, "worker pod not in a user namespace")
			for _, a := range []string{"--sandbox=required", "--harness-server=true", "--harness-pool=2",
				"--trial-cache-mb=0", "--prepared-max=4", "--lease-renew-seconds=10"} {
				e.want(hasArg(wc, a), "worker without %s: %v", a, wc["args"])
			}
			e.want(!hasArg(wc, "--sandbox-hide"), "worker hides paths by default: %v", wc["args"])
			// The other pods keep the RuntimeDefault seccomp profile of the pod.
			j := idx["Deployment/"+fullname+"-judge"]
			e.want(get(firstContainer(j), "securityContext", "seccompProfile") == nil &&
				str(get(j, "spec", "template", "spec", "securityContext", "seccompProfile", "type")) == "RuntimeDefault",
				"judge seccomp changed")
			e.want(get(j, "spec", "template", "spec", "hostUsers") == nil, "judge hostUsers set")
			e.want(len(idx.ofKind("NetworkPolicy")) == 6, "want 6 NetworkPolicies, got %d", len(idx.ofKind("NetworkPolicy")))
			e.want(len(idx.ofKind("PodDisruptionBudget")) == 7, "want 7 PDBs, got %d", len(idx.ofKind("PodDisruptionBudget")))
			e.want(len(idx.ofKind("ServiceMonitor")) == 0 && len(idx.ofKind("PrometheusRule")) == 0, "monitoring CRDs rendered by default")
			e.want(idx["Secret/"+fullname+"-internal-token"] != nil, "no internal token Secret")
			e.want(idx["Secret/"+fullname+"-api-tokens"] == nil, "API tokens Secret without auth")
			dash := 0
			for _, cm := range idx.ofKind("ConfigMap") {
				if str(get(cm, "metadata", "labels", "grafana_dashboard")) == "1" {
					dash++
				}
			}
			e.want(dash >= 2, "want the dashboards as ConfigMaps, got %d", dash)
			for _, wl := range workloadsOf(idx) {
				c := firstContainer(wl)
				e.want(!hasArg(c, "--tokens-file"), "%s has --tokens-file without auth", str(get(wl, "metadata", "name")))
				e.want(envVar(c, "KAGENT_INTERNAL_TOKEN") != nil, "%s without the internal token", str(get(wl, "metadata", "name")))
			}
			return e.problems
		},
	},
	{
		name:  "postgres",
		files: []string{"postgres.yaml"},
		expect: func(idx objIndex) []string {
			e := &expectations{}
			sts := idx["StatefulSet/"+fullname+"-coordinator"]
			c := firstContainer(sts)
			e.want(!hasArg(c, "--db="), "coordinator has --db in args on PostgreSQL")
			ref := mapOf(get(envVar(c, "KAGENT_DB"), "valueFrom", "secretKeyRef"))
			e.want(str(ref["name"]) == fullname+"-postgres" && str(ref["key"]) == "url", "KAGENT_DB from %v", ref)
			sec := idx["Secret/"+fullname+"-postgres"]
			e.want(strings.HasPrefix(str(get(sec, "stringData", "url")), "postgres://"), "postgres Secret url")
			e.want(len(list(get(sts, "spec", "volumeClaimTemplates"))) == 0, "PVC template on PostgreSQL")
			return e.problems
		},
	},
	{
		name:  "postgres-ha",
		files: []string{"postgres-ha.yaml"},
		expect: func(idx objIndex) []string {
			e := &expectations{}
			sts := idx["StatefulSet/"+fullname+"-coordinator"]
			e.want(num(get(sts, "spec", "replicas")) == 3, "coordinator replicas %v", get(sts, "spec", "replicas"))
			c := firstContainer(sts)
			e.want(hasArg(c, "--leader-election"), "no --leader-election: %v", c["args"])
			e.want(hasArg(c, "--leader-lease-seconds=10"), "lease seconds not passed: %v", c["args"])
			e.want(hasArg(c, "--advertise=$(POD_IP):"), "no --advertise from the pod IP: %v", c["args"])
			e.want(str(get(envVar(c, "POD_IP"), "valueFrom", "fieldRef", "fieldPath")) == "status.podIP",
				"POD_IP not from the downward API")
			w := firstContainer(idx["Deployment/"+fullname+"-worker-h200"])
			want := "--coordinator="
			for i := 0; i < 3; i++ {
				if i > 0 {
					want += ","
				}
				want += fmt.Sprintf("%s-coordinator-%d.%s-coordinator-headless:50051", fullname, i, fullname)
			}
			e.want(hasArg(w, want), "workers do not register with every replica: %v (want %s)", w["args"], want)
			cp := idx["NetworkPolicy/"+fullname+"-coordinator"]
			e.want(strings.Contains(fmt.Sprint(get(cp, "spec", "ingress")), "component:coordinator"),
				"replicas cannot reach each other through the coordinator's NetworkPolicy: %v", get(cp, "spec", "ingress"))
			return e.problems
		},
	},
	{
		name:  "postgres-existing-secrets",
		files: []string{"postgres-existing.yaml"},
		expect: func(idx objIndex) []string {
			e := &expectations{}
			c := firstContainer(idx["StatefulSet/"+fullname+"-coordinator"])
			ref := mapOf(get(envVar(c, "KAGENT_DB"), "valueFrom", "secretKeyRef"))
			e.want(str(ref["name"]) == "kagent-db" && str(ref["key"]) == "database-url", "KAGENT_DB from %v", ref)
			e.want(idx["Secret/"+fullname+"-postgres"] == nil && idx["Secret/"+fullname+"-internal-token"] == nil,
				"the chart rendered Secrets that exist already")
			tok := mapOf(get(envVar(c, "KAGENT_INTERNAL_TOKEN"), "valueFrom", "secretKeyRef"))
			e.want(str(tok["name"]) == "kagent-internal", "internal token from %v", tok)
			return e.problems
		},
	},
	{
		name:  "auth-monitoring-llm",
		files: []string{"auth.yaml"},
		expect: func(idx objIndex) []string {
			e := &expectations{}
			sec := idx["Secret/"+fullname+"-api-tokens"]
			e.want(strings.Contains(str(get(sec, "stringData", "tokens")), "tok-team-a team-a\n"), "tokens file: %q", str(get(sec, "stringData", "tokens")))
			for _, wl := range workloadsOf(idx) {
				c := firstContainer(wl)
				e.want(hasArg(c, "--tokens-file=/etc/kagent/auth/tokens"), "%s without --tokens-file", str(get(wl, "metadata", "name")))
			}
			sm := idx["ServiceMonitor/"+fullname]
			e.want(str(get(sm, "metadata", "labels", "release")) == "kube-prometheus-stack", "ServiceMonitor labels: %v", get(sm, "metadata", "labels"))
			e.want(idx["PrometheusRule/"+fullname] != nil, "no PrometheusRule")
			om := firstContainer(idx["Deployment/"+fullname+"-optimization-manager"])
			envFrom := list(om["envFrom"])
			e.want(len(envFrom) == 1 && str(get(envFrom[0], "secretRef", "name")) == fullname+"-llm", "LLM keys not in envFrom: %v", envFrom)
			e.want(idx["ConfigMap/"+fullname+"-llm"] != nil, "no LLM config ConfigMap")
			// The LLM configuration is turned on where a binary takes it, and only there.
			// (every LLM agent's service: the judge's narrative, the analyzer's prescriptions,
			// the orchestrator's reflexions, the optimization manager's rewrite).
			for _, comp := range []string{"judge", "analyzer", "orchestrator", "optimization-manager"} {
				c := firstContainer(idx["Deployment/"+fullname+"-"+comp])
				e.want(hasArg(c, "--llm-config=/etc/kagent/llm/llm.json"), "%s without --llm-config", comp)
			}
			for _, wl := range workloadsOf(idx) {
				if name := str(get(wl, "metadata", "name")); strings.HasSuffix(name, "-coordinator") {
					e.want(!hasArg(firstContainer(wl), "--llm-config=/etc/kagent/llm/llm.json"),
						"%s given --llm-config", name)
				}
			}
			e.want(idx["Secret/"+fullname+"-internal-token"] != nil &&
				str(get(idx["Secret/"+fullname+"-internal-token"], "data", "internal-token")) == "c2VjcmV0LWludGVybmFs",
				"internal token from values not used")
			cp := idx["NetworkPolicy/"+fullname+"-coordinator"]
			e.want(strings.Contains(fmt.Sprint(get(cp, "spec", "ingress")), "ingress-nginx"), "coordinatorFrom not applied")
			return e.problems
		},
	},
	{
		name:  "cpu-workers-no-netpol",
		files: []string{"cpu.yaml"},
		expect: func(idx objIndex) []string {
			e := &expectations{}
			w := idx["Deployment/"+fullname+"-worker-cpu"]
			c := firstContainer(w)
			e.want(hasArg(c, "--device=cpu"), "cpu worker args")
			e.want(get(c, "resources", "limits", "nvidia.com/gpu") == nil, "cpu worker asks for a GPU")
			e.want(len(idx.ofKind("NetworkPolicy")) == 0, "NetworkPolicies rendered while disabled")
			e.want(len(idx.ofKind("PodDisruptionBudget")) == 1, "want 1 PDB (the others disabled), got %d", len(idx.ofKind("PodDisruptionBudget")))
			return e.problems
		},
	},
	{
		name:  "sandbox-best-effort",
		files: []string{"sandbox-best-effort.yaml"},
		expect: func(idx objIndex) []string {
			e := &expectations{}
			w := idx["Deployment/"+fullname+"-worker-h200"]
			c := firstContainer(w)
			sc := mapOf(c["securityContext"])
			e.want(hasArg(c, "--sandbox=best-effort"), "mode: %v", c["args"])
			e.want(hasArg(c, "--sandbox-hide=/etc/kagent") && hasArg(c, "--sandbox-hide=/opt/site/secrets"),
				"hidden paths: %v", c["args"])
			e.want(hasArg(c, "--harness-pool=4") && hasArg(c, "--prepared-max=8") && hasArg(c, "--trial-cache-mb=4096"),
				"harness server values: %v", c["args"])
			e.want(str(get(sc, "seccompProfile", "type")) == "Localhost" &&
				str(get(sc, "seccompProfile", "localhostProfile")) == "profiles/kagent-bwrap.json",
				"seccomp %v", sc["seccompProfile"])
			e.want(sc["appArmorProfile"] == nil && sc["procMount"] == nil, "appArmor/procMount set: %v", sc)
			e.want(get(w, "spec", "template", "spec", "hostUsers") == nil, "hostUsers set")
			e.want(boolOf(sc["runAsNonRoot"]) && num(sc["runAsUser"]) == 10001, "not non-root: %v", sc)
			return e.problems
		},
	},
	{name: "bad-sandbox-mode", files: []string{"bad-sandbox-mode.yaml"},
		wantError: "workers.sandbox.mode must be required or best-effort"},
	{name: "sandbox-hide-relative", files: []string{"bad-sandbox-hide.yaml"},
		wantError: "is not an absolute path"},
	{name: "unmasked-proc-without-userns", files: []string{"bad-sandbox-proc.yaml"},
		wantError: "procMount Unmasked needs workers.sandbox.hostUsers: false"},
	{name: "profiling-caps-in-userns", files: []string{"bad-sandbox-profiling.yaml"},
		wantError: "does not open the GPU's counters"},
	{name: "auth-without-tokens", files: []string{"bad-auth.yaml"}, wantError: "auth.enabled needs auth.tokens"},
	{name: "postgres-without-url", files: []string{"bad-postgres.yaml"}, wantError: "storage.postgres.url"},
	{name: "replicas-on-sqlite", files: []string{"bad-ha-sqlite.yaml"}, wantError: "coordinator.replicas above 1 needs storage.type postgres"},
	{name: "unknown-storage", files: []string{"bad-storage.yaml"}, wantError: "storage.type must be sqlite or postgres"},
	{name: "bad-pool-name", files: []string{"bad-pool.yaml"}, wantError: "workers.pools[].name"},
}

// A mutation: replace old by new in a template (or patch the values) and expect a problem
// containing want.
type mutation struct {
	name, file, old, new string
	valuesPatch          string
	values               []string
	want                 string
	expect               func(objIndex) []string
}

var mutations = []mutation{
	{name: "template syntax error", file: "templates/coordinator.yaml",
		old: "{{- if $sqlite }}", new: "{{- if $sqlite }", want: "parse"},
	{name: "undefined helper", file: "templates/services.yaml",
		old: `include "kagent.commonArgs"`, new: `include "kagent.commonArg"`, want: "no template"},
	{name: "broken indentation", file: "templates/workers.yaml",
		old: "          imagePullPolicy:", new: "        imagePullPolicy:", want: "invalid YAML"},
	{name: "duplicate key", file: "templates/workers.yaml",
		old: "      containers:\n", new: "      containers: []\n      containers:\n", want: "invalid YAML"},
	{name: "worker without GPU limit", file: "templates/workers.yaml",
		old: `{{- $_ := set $res "limits" $limits }}`, new: "", want: "nvidia.com/gpu to 1"},
	{name: "worker without nodeSelector", valuesPatch: "workers:\n  pools:\n    - name: a\n      replicas: 1\n      tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n",
		want: "without a nodeSelector"},
	{name: "selector does not match labels", file: "templates/services.yaml",
		old:  "    matchLabels:\n      {{- include \"kagent.selectorLabels\" (dict \"root\" $root \"component\" $comp.name) | nindent 6 }}",
		new:  "    matchLabels:\n      {{- include \"kagent.selectorLabels\" (dict \"root\" $root \"component\" \"other\") | nindent 6 }}",
		want: "does not match the pod template labels"},
	{name: "service targets a missing port", file: "templates/coordinator.yaml",
		old: "targetPort: metrics", new: "targetPort: metric", want: "targetPort metric does not exist"},
	{name: "probe on the wrong port", file: "templates/_helpers.tpl",
		old: "readinessProbe:\n  grpc:\n    port: {{ int .Values.ports.grpc }}", new: "readinessProbe:\n  grpc:\n    port: 8080",
		want: "readinessProbe port 8080"},
	{name: "liveness on the readiness service", file: "templates/_helpers.tpl",
		old:  "livenessProbe:\n  grpc:\n    port: {{ int .Values.ports.grpc }}\n    service: kagent.liveness",
		new:  "livenessProbe:\n  grpc:\n    port: {{ int .Values.ports.grpc }}\n    service: \"\"",
		want: "livenessProbe checks service"},
	{name: "grace shorter than the drain", file: "templates/_helpers.tpl",
		old: "(int .c.shutdownGraceSeconds) (int .root.Values.shutdown.marginSeconds)", new: "(int .root.Values.shutdown.marginSeconds)",
		want: "terminationGracePeriodSeconds"},
	{name: "network policy open to everyone", file: "templates/networkpolicy.yaml",
		old:  "      from:\n        - podSelector:\n            matchLabels:\n              {{- include \"kagent.selectorLabels\" (dict \"root\" $root \"component\" \"coordinator\") | nindent 14 }}\n    - ports:\n        - port: metrics",
		new:  "    - ports:\n        - port: metrics",
		want: "lets everyone reach"},
	{name: "network policy admits the judge", file: "templates/networkpolicy.yaml",
		old:  "(dict \"root\" $root \"component\" \"coordinator\") | nindent 14 }}\n    - ports:\n        - port: metrics",
		new:  "(dict \"root\" $root \"component\" \"judge\") | nindent 14 }}\n    - ports:\n        - port: metrics",
		want: "reach the"},
	{name: "secret reference to nothing", file: "templates/_helpers.tpl",
		old: "name: {{ include \"kagent.internalTokenSecret\" . }}", new: "name: nothing-here",
		want: "which is not rendered"},
	{name: "coordinator dials a missing service", file: "templates/coordinator.yaml",
		old: `(dict "root" $root "component" "judge")`, new: `(dict "root" $root "component" "jugde")`,
		want: "no Service"},
	{name: "sqlite path off the volume", file: "templates/coordinator.yaml",
		old: "mountPath: {{ dir .Values.storage.sqlite.path }}", new: "mountPath: /data",
		want: "not a mounted volumeClaimTemplate"},
	{name: "image without tag", file: "templates/_helpers.tpl",
		old: `printf "%s%s:%s"`, new: `printf "%s%s%s"`, want: "REPOSITORY:TAG"},
	{name: "missing value renders empty", file: "templates/workers.yaml",
		old: "- --python={{ $w.python }}", new: "- --python={{ $w.pythn }}\n            - --x={{ $w.pythn.x }}",
		want: "nil pointer"},
	{name: "args reference an undefined env var", file: "templates/workers.yaml",
		old: "- --worker-id=$(POD_NAME)", new: "- --worker-id=$(NODE_NAME)", want: "not in env"},
	{name: "PDB selects nothing", file: "templates/pdb.yaml",
		old: "kagent.dev/worker-pool: {{ $it.pool }}", new: "kagent.dev/worker-pool: x{{ $it.pool }}",
		want: "matches 0 workloads"},
	{name: "dashboard label dropped", file: "templates/dashboards.yaml",
		old: "{{ $root.Values.dashboards.label }}: {{ $root.Values.dashboards.labelValue | quote }}", new: "",
		want: "dashboard ConfigMap without label"},
	{name: "service monitor on a missing port", file: "templates/servicemonitor.yaml",
		old: "- port: metrics", new: "- port: prometheus", values: []string{"auth.yaml"},
		want: "endpoint port \"prometheus\""},
	{name: "root user", valuesPatch: "podSecurityContext:\n  runAsNonRoot: false\n", want: "runAsNonRoot"},
}
