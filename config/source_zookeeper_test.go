package config_test

import (
	"testing"

	"github.com/fencegw/fencegw/config"
)

// zkRoute is a raw route with the given resource and epoch_source (YAML flow
// mappings).
func zkRoute(resource, src string) string {
	return `routes: [{prefix: /a/, upstream: "http://127.0.0.1:9", tokens: raw, resource: "` + resource +
		`", epoch_source: ` + src + `}]`
}

// TestZooKeeperSourceValid: a fixed resource with any path, and a resource
// template with a path that selects the election by {resource}.
func TestZooKeeperSourceValid(t *testing.T) {
	for _, doc := range []string{
		zkRoute("report", `{kind: zookeeper, servers: ["zk1:2181", "zk2:2181"], path: /services/report/leader}`),
		zkRoute("tenant-{segment:1}", `{kind: zookeeper, servers: ["zk1:2181"], path: "/tenants/{resource}/leader"}`),
		zkRoute("report", `{kind: zookeeper, servers: ["[::1]:2181"], path: "/e/{resource}"}`),
	} {
		c, err := config.Parse([]byte(doc))
		if err == nil {
			err = c.Validate()
		}
		if err != nil {
			t.Errorf("%s: %v", doc, err)
			continue
		}
		if s := c.Routes[0].EpochSource; s.Kind != "zookeeper" || len(s.Servers) == 0 || s.Path == "" {
			t.Errorf("%s: parsed %+v", doc, s)
		}
	}
}

// TestZooKeeperSourceInvalid: each mistake is named by its field.
func TestZooKeeperSourceInvalid(t *testing.T) {
	for doc, want := range map[string]string{
		zkRoute("r", `{kind: zookeeper, path: /e}`):                                                   "routes[0].epoch_source.servers: at least one host:port",
		zkRoute("r", `{kind: zookeeper, servers: [zk1], path: /e}`):                                   "routes[0].epoch_source.servers[0]: not a host:port",
		zkRoute("r", `{kind: zookeeper, servers: ["zk1:2181"]}`):                                      "routes[0].epoch_source.path: the election's parent znode is required",
		zkRoute("r", `{kind: zookeeper, servers: ["zk1:2181"], path: e/f}`):                           "routes[0].epoch_source.path: invalid znode path: \"e/f\" is not absolute",
		zkRoute("r", `{kind: zookeeper, servers: ["zk1:2181"], path: /}`):                             "routes[0].epoch_source.path: invalid znode path: the root cannot be an election",
		zkRoute("r", `{kind: zookeeper, servers: ["zk1:2181"], path: /e/}`):                           "routes[0].epoch_source.path: invalid znode path",
		zkRoute("r", `{kind: zookeeper, servers: ["zk1:2181"], path: /e/../f}`):                       "routes[0].epoch_source.path: invalid znode path",
		zkRoute("r", `{kind: zookeeper, servers: ["zk1:2181"], path: "/e/{segment:1}"}`):              "routes[0].epoch_source.path: invalid znode path: \"/e/{segment:1}\": {resource} is the only placeholder",
		zkRoute("r", `{kind: zookeeper, servers: ["zk1:2181"], path: "/e/\x01"}`):                     "routes[0].epoch_source.path: invalid znode path: \"/e/\\x01\" contains the character U+0001",
		zkRoute("r", `{kind: zookeeper, servers: ["zk1:2181"], path: /e, dsn: "postgres://x/y"}`):     "routes[0].epoch_source.dsn: dsn and table are for kind postgres",
		zkRoute("r", `{kind: zookeeper, servers: ["zk1:2181"], path: /e, endpoints: ["e:2379"]}`):     "routes[0].epoch_source.endpoints: endpoints and prefix are for kind etcd",
		zkRoute("r", `{kind: etcd, endpoints: ["e:2379"], prefix: /p, servers: ["zk1:2181"]}`):        "routes[0].epoch_source.servers: servers and path are for kind zookeeper",
		zkRoute("r", `{kind: zookeeper, servers: ["zk1:2181"], path: /e, key: k}`):                    "routes[0].epoch_source.address: address and key are for kind redis",
		zkRoute("r", `{kind: redis, address: "db:6379", servers: ["zk1:2181"]}`):                      "routes[0].epoch_source.servers: servers and path are for kind zookeeper",
		zkRoute("r", `{kind: postgres, dsn: "postgres://x/y", path: /e}`):                             "routes[0].epoch_source.servers: servers and path are for kind zookeeper",
		zkRoute("t-{segment:1}", `{kind: zookeeper, servers: ["zk1:2181"], path: /e}`):                "routes[0].resource: must be a fixed name with a zookeeper epoch_source whose path has no {resource}",
		zkRoute("{header:X-Tenant}", `{kind: zookeeper, servers: ["zk1:2181"], path: "/{resource}"}`): "routes[0].resource: must not use {header:…}",
	} {
		expectFieldError(t, doc, doc, want)
	}
}
