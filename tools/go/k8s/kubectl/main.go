// Command kubectl is the upstream kubectl, built from the pinned module.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		// Prints the error the way kubectl users expect and exits non-zero.
		util.CheckErr(err)
	}
}
