package gateway_test

import (
	"context"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

func TestZZScratch(t *testing.T) {
	l := openapi3.NewLoader()
	doc, err := l.LoadFromFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(doc.IsOpenAPI31OrLater())
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = gorillamux.NewRouter(doc)
	t.Log(err)
	_ = openapi3filter.ValidateRequest
}
