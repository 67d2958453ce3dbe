// Command pause is the node cluster's pod sandbox image (hack/node-cluster): it holds the pod's
// namespaces and waits for SIGTERM or SIGINT. Built statically, it is the image's only file.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
