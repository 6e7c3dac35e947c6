package config_test

import (
	"strings"
	"testing"

	"github.com/fencegw/fencegw/config"
)

// TestKubernetesSourceValid: every key is optional; a fixed resource with
// any lease, a resource template with a lease that selects by {resource}.
func TestKubernetesSourceValid(t *testing.T) {
	for _, doc := range []string{
		zkRoute("report", `{kind: kubernetes}`),
		zkRoute("tenant-{segment:1}", `{kind: kubernetes}`),
		zkRoute("report", `{kind: kubernetes, kubeconfig: /etc/fencegw/kubeconfig, namespace: team-a, lease: report-generator}`),
		zkRoute("tenant-{segment:1}", `{kind: kubernetes, namespace: jobs, lease: "{resource}-leader"}`),
	} {
		c, err := config.Parse([]byte(doc))
		if err == nil {
			err = c.Validate()
		}
		if err != nil {
			t.Errorf("%s: %v", doc, err)
			continue
		}
		if s := c.Routes[0].EpochSource; s.Kind != "kubernetes" {
			t.Errorf("%s: parsed %+v", doc, s)
		}
	}
}

// TestKubernetesSourceInvalid: each mistake is named by its key, with the
// value and what is allowed.
func TestKubernetesSourceInvalid(t *testing.T) {
	for doc, want := range map[string]string{
		zkRoute("r", `{kind: kubernetes, namespace: Team_A}`):                               `routes[0].epoch_source.namespace: namespace "Team_A": a lowercase RFC 1123 label`,
		zkRoute("r", `{kind: kubernetes, namespace: "`+strings.Repeat("n", 64)+`"}`):        "routes[0].epoch_source.namespace: namespace \"nnnn",
		zkRoute("r", `{kind: kubernetes, lease: Report}`):                                   `routes[0].epoch_source.lease: invalid Lease name: "Report"`,
		zkRoute("r", `{kind: kubernetes, lease: "a/{resource}"}`):                           `routes[0].epoch_source.lease: invalid Lease name: "a/x"`,
		zkRoute("r", `{kind: kubernetes, lease: "{segment:1}"}`):                            `routes[0].epoch_source.lease: invalid Lease name: "{segment:1}": {resource} is the only placeholder`,
		zkRoute("r", `{kind: kubernetes, kubeconfig: " "}`):                                 "routes[0].epoch_source.kubeconfig: is blank",
		zkRoute("r", `{kind: kubernetes, path: /e}`):                                        "routes[0].epoch_source.servers: servers and path are for kind zookeeper",
		zkRoute("r", `{kind: redis, address: "db:6379", lease: x}`):                         "routes[0].epoch_source.lease: kubeconfig, namespace and lease are for kind kubernetes",
		zkRoute("r", `{kind: zookeeper, servers: ["zk1:2181"], path: /e, namespace: team}`): "routes[0].epoch_source.lease: kubeconfig, namespace and lease are for kind kubernetes",
		zkRoute("t-{segment:1}", `{kind: kubernetes, lease: report}`):                       "routes[0].resource: must be a fixed name with a kubernetes epoch_source whose lease has no {resource}",
		zkRoute("{header:X-Tenant}", `{kind: kubernetes}`):                                  "routes[0].resource: must not use {header:…}",
		zkRoute("r", `{kind: kube}`):                                                        `routes[0].epoch_source.kind: must be postgres, etcd, redis, zookeeper or kubernetes, got "kube"; did you mean "kubernetes"?`,
		zkRoute("r", `{kind: Kubernetes}`):                                                  `got "Kubernetes"; did you mean "kubernetes"?`,
		zkRoute("r", `{kind: zookeper}`):                                                    `did you mean "zookeeper"?`,
	} {
		expectFieldError(t, doc, doc, want)
	}
}
