package aeronhost_test

import (
	"context"
	"log"
	"os"
	"os/signal"

	acluster "github.com/lirm/aeron-go/cluster"
	"github.com/matchlog/matchlog/cluster/aeronhost"
	"github.com/matchlog/matchlog/cluster/enginesvc"
)

// The matching engine as the service of an Aeron Cluster node: the node's
// Java media driver, archive and consensus module are already running;
// this process runs until interrupted or terminated by the cluster.
func Example() {
	// Java's consensus module declares 0.0.1 and has no property to
	// change it; aeron-go refuses a log of another major version.
	const appVersion = 1 // 0.0.1
	container := acluster.NewOptions()
	container.ClusterDir = "/var/lib/matchlog/cluster" // the consensus module's cluster dir
	container.ServiceId = 0

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	svc := enginesvc.New(enginesvc.Options{AppVersion: appVersion})
	err := aeronhost.Run(ctx, aeronhost.Options{
		AeronDir:   "/dev/shm/aeron-matchlog", // the media driver's directory
		Container:  container,
		AppVersion: appVersion,
	}, svc)
	if err != nil {
		log.Fatal(err)
	}
}
