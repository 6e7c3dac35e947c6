package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// startNginx runs one single-process nginx (no master, no daemon) with
// servers as its http block, pinned to cpu.
func startNginx(b *testing.B, dir, name string, cpu int, servers string) *proc {
	b.Helper()
	bin, err := lookPath("nginx", "nginx-light")
	if err != nil {
		b.Fatal(err)
	}
	prefix := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Join(prefix, "logs"), 0o755); err != nil {
		b.Fatal(err)
	}
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
user root;
pid %[1]s/nginx.pid;
error_log %[1]s/logs/error.log warn;
events { worker_connections 4096; multi_accept on; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 120s;
%[2]s
}
`, prefix, servers)
	path := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	return startProc(b, dir, name, pinned(cpu, bin, "-p", prefix, "-e", filepath.Join(prefix, "logs/error.log"), "-c", path))
}

// upstreamServers is the upstream every proxy forwards to: 202 for all.
func upstreamServers(addr string) string {
	return fmt.Sprintf(`  server { listen %s; location / { return 202; } }`, addr)
}

// proxyServers are the nginx baselines: proxy_pass with upstream keepalive
// on proxyAddr, and the same behind auth_request to the Go checker on
// authAddr.
func proxyServers(proxyAddr, authAddr, upstreamAddr, checkerAddr string) string {
	return fmt.Sprintf(`  upstream app { server %[3]s; keepalive 64; keepalive_requests 1000000; }
  upstream checker { server %[4]s; keepalive 64; keepalive_requests 1000000; }
  server {
    listen %[1]s;
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
  server {
    listen %[2]s;
    location / {
      auth_request /_fence;
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
    location = /_fence {
      internal;
      proxy_pass http://checker;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
    }
  }`, proxyAddr, authAddr, upstreamAddr, checkerAddr)
}
