package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/config"
)

// expectFieldError checks that the configuration doc fails to parse or to
// validate with an error containing want that is a *config.FieldError;
// name is what a failure reports doc as.
func expectFieldError(t *testing.T, name, doc, want string) {
	t.Helper()
	c, err := config.Parse([]byte(doc))
	if err == nil {
		err = c.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s\n  got  %v\n  want %q", name, err, want)
		return
	}
	var fe *config.FieldError
	if !errors.As(err, &fe) {
		t.Errorf("%s: error %v is not a *FieldError", name, err)
	}
}
