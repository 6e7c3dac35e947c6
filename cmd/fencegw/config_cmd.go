package main

import (
	"fmt"
	"io"

	"github.com/fencegw/fencegw/config"
)

const configUsage = `Usage:
  fencegw config validate FILE   check a configuration; exit 1 with every error, naming its field
  fencegw config example         print an annotated example configuration
`

func configCmd(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 2 && args[0] == "validate":
		c, err := config.Load(args[1])
		if err != nil {
			fmt.Fprintf(stderr, "invalid configuration:\n%s\n", indent(err.Error()))
			return 1
		}
		fmt.Fprintf(stdout, "%s: valid (%d routes, %s store)\n", args[1], len(c.Routes), config.KindOf(c.Store))
		return 0
	case len(args) == 1 && args[0] == "example":
		fmt.Fprint(stdout, config.Example)
		return 0
	default:
		fmt.Fprint(stderr, configUsage)
		return 2
	}
}
