package control

import (
	"log/slog"
	"net/http"

	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/tokens"
)

// forgetIdemKey deletes the idempotency record of a resource and key
// (DELETE /v1/idempotency/{resource}/{key}, admin keys only), whatever its
// state: 204, or 404 when there is none. It is how an operator who checked
// that a write of unknown outcome did not take effect lets it be sent
// again; the next write with the key is forwarded.
func (c *control) forgetIdemKey(w http.ResponseWriter, r *http.Request) {
	resource, err := pathParam(r, "resource")
	if err == nil {
		err = tokens.ValidateResource(resource)
	}
	var key string
	if err == nil {
		key, err = pathParam(r, "key")
	}
	if err == nil {
		if err = tokens.ValidateIdemKey(key); err != nil {
			err = problem.Refuse(problem.KindBadRequest, err.Error())
		}
	}
	var found bool
	if err == nil {
		found, err = c.Fence.Store().ForgetKey(r.Context(), resource, key)
	}
	switch {
	case err != nil:
		p := problem.Of(err)
		if p.Cause != nil {
			p.Detail, p.Resource = "the store could not delete the record", resource
		}
		problem.Write(w, r, p)
	case !found:
		problem.WriteError(w, r, problem.Refuse(problem.KindNotFound, "no record of this Idempotency-Key for this resource"))
	default:
		caller := ""
		if k, ok := APIKeyFrom(r.Context()); ok {
			caller = k.Name
		}
		c.Logger.LogAttrs(r.Context(), slog.LevelWarn, "idempotency record forgotten: the next write with its key is forwarded",
			slog.String("resource", resource), slog.String("key", key), slog.String("caller", caller))
		w.WriteHeader(http.StatusNoContent)
	}
}
