package server

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/fencegw/fencegw/config"
)

// checkKeyFiles refuses private key files other users may read (see
// keyFileExposure): signing.key_file, tls.key_file and api_tls.key_file.
// With insecure_key_file_permissions it logs a warning for each instead.
func checkKeyFiles(c config.Config, log *slog.Logger) error {
	files := map[string]string{"signing.key_file": c.Signing.KeyFile}
	if c.TLS != nil {
		files["tls.key_file"] = c.TLS.KeyFile
	}
	if c.APITLS != nil {
		files["api_tls.key_file"] = c.APITLS.KeyFile
	}
	var errs []error
	for field, path := range files {
		if path == "" {
			continue
		}
		exposure, err := keyFileExposure(path)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		case exposure == "":
		case c.InsecureKeyFilePermissions:
			log.Warn("private key file readable by other users (insecure_key_file_permissions is set)",
				"field", field, "path", path, "exposure", exposure)
		default:
			errs = append(errs, fmt.Errorf("%s: %s %s: chmod 600 it (or 640 with a group of this process's), "+
				"or set insecure_key_file_permissions to start anyway", field, path, exposure))
		}
	}
	return errors.Join(errs...)
}
