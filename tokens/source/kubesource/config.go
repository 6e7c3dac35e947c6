package kubesource

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// restConfig finds the cluster and credentials: the kubeconfig file when
// one is named; else the in-cluster configuration; else the files
// $KUBECONFIG lists. Nothing else is guessed (no ~/.kube/config): a
// gateway must not fence against whatever cluster its user last chose.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		return c, nil
	}
	c, err := rest.InClusterConfig()
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, rest.ErrNotInCluster) {
		return nil, fmt.Errorf("in-cluster configuration: %w", err)
	}
	env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	if env == "" {
		return nil, errors.New("no kubeconfig: not in a cluster, $KUBECONFIG is empty and no kubeconfig file is configured")
	}
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(env)}
	c, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("$KUBECONFIG %s: %w", env, err)
	}
	return c, nil
}

// tune makes c the gateway's: a client of coordination.k8s.io/v1 alone,
// with a scheme of its own that knows only Leases and Status (the typed
// clientset's scheme registers every built-in API group: tens of
// megabytes in the binary); no client-side rate limit (every check is a
// read the gateway must make now, and Coalesce already shares them); no
// warnings logged; a transport of its own (a Proxy function makes
// client-go build one instead of sharing its process-wide cache), so that
// Close can release its connections; and HTTP/1.1 only, so that a read
// whose context ends closes its connection: a connection a partition
// killed without a reset (its bytes dropped) then serves no later read,
// where over HTTP/2 every read would share it, and time out, until
// client-go's health check dropped it (30 s without a frame, then a 15 s
// ping) — long after the partition healed.
func tune(c *rest.Config) error {
	scheme := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		return err
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"}) // Status
	c.GroupVersion = &coordinationv1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	c.ContentType = runtime.ContentTypeJSON
	c.QPS = -1
	c.Burst = 0
	c.WarningHandler = rest.NoWarnings{}
	c.UserAgent = "fencegw"
	c.Timeout = 0 // each read is bounded by its context
	if c.Proxy == nil {
		c.Proxy = http.ProxyFromEnvironment
	}
	c.TLSClientConfig.NextProtos = []string{"http/1.1"}
	return nil
}
