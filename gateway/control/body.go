package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/fencegw/fencegw/wire"
)

// decodeBody reads one JSON object into v, a pointer to a struct, refusing
// with 400: bodies over maxLeaseBody, invalid UTF-8 or a lone surrogate
// escape anywhere (wire.CheckText: encoding/json would read each as U+FFFD,
// so two holders would be one), unknown members, a member named like
// one of v's but for case or given twice (wire.CheckMembers: what a proxy
// in front reads must be what the gateway reads), trailing data, and
// values of the wrong type or range, naming the member where it can.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxLeaseBody))
	if err != nil {
		badRequest(w, r, "the body could not be read: "+err.Error())
		return false
	}
	if err := wire.CheckText(body); err != nil {
		badRequest(w, r, "the body must be valid UTF-8 without lone surrogate escapes: "+err.Error())
		return false
	}
	if err := wire.CheckMembers(body, memberNames(v)...); err != nil {
		badRequest(w, r, "the body is ambiguous: "+err.Error())
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, wire.ErrEpoch) {
			badRequest(w, r, "epoch: "+err.Error())
		} else {
			badRequest(w, r, "the body is not a valid JSON object: "+err.Error())
		}
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		badRequest(w, r, "the body holds more than one JSON value")
		return false
	}
	return true
}

// memberNames returns the JSON member names of the struct v points to.
func memberNames(v any) []string {
	t := reflect.TypeOf(v).Elem()
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}
