// Package bench reproduces fencegw's performance table side by side with
// its baselines on one machine: nginx proxy_pass, nginx auth_request to a
// Go checker, a bare Go httputil.ReverseProxy, and fencegw admitting and
// refusing writes on each store. Run it with ./bench/run; see README
// "Performance" for the layout and what each figure means.
package bench
