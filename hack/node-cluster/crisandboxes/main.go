// Command crisandboxes stops and removes every pod sandbox of a CRI runtime (crictl is not available
// here): hack/node-cluster/down.sh runs it against the cluster's own containerd so that the CNI plugins
// release each pod's network (veth, IP, namespace) before the bridge goes away.
//
// It is its own module (k8s.io/cri-api is no dependency of formsservice); build-assets.sh builds it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtime "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	endpoint := flag.String("endpoint", "", "the CRI socket, unix:///path/to/containerd.sock")
	flag.Parse()
	if err := run(*endpoint); err != nil {
		fmt.Fprintln(os.Stderr, "crisandboxes:", err)
		os.Exit(1)
	}
}

func run(endpoint string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt := runtime.NewRuntimeServiceClient(conn)
	list, err := rt.ListPodSandbox(ctx, &runtime.ListPodSandboxRequest{})
	if err != nil {
		return err
	}
	var failed error
	for _, s := range list.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtime.StopPodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			failed = fmt.Errorf("stop %s/%s: %w", s.Metadata.Namespace, s.Metadata.Name, err)
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtime.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			failed = fmt.Errorf("remove %s/%s: %w", s.Metadata.Namespace, s.Metadata.Name, err)
			continue
		}
		fmt.Printf("removed pod sandbox %s/%s\n", s.Metadata.Namespace, s.Metadata.Name)
	}
	return failed
}
