// pause holds a pod sandbox's namespaces: it sleeps until SIGTERM or SIGINT and, as
// PID 1 of the pod when the pod shares its PID namespace, reaps every exited child.
// Built static (CGO_ENABLED=0) by scripts/images.sh into an image FROM scratch.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "-v", "--version", "version":
			fmt.Println("graphfleet pause")
			return
		default:
			fmt.Fprintln(os.Stderr, "usage: pause   (sleeps until SIGTERM/SIGINT, reaping children)")
			os.Exit(2)
		}
	}
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			// Like the upstream pause: a clean exit on the signals that stop a sandbox.
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every child that has exited; several SIGCHLDs may arrive as one.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
