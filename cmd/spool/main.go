// Command spool runs Spool: a message broker that speaks Apache RocketMQ's
// remoting protocol.
//
//	spool standalone   name server and broker in one process on one store
//	spool namesrv      a name server
//	spool broker       a broker registering with name servers
//	spool controller   a controller of RocketMQ's controller mode (raft-replicated)
//	spool admin        administration with mqadmin's commands (updateTopic, clusterList, ...)
//	spool bench        load generator speaking the remoting protocol
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "spool",
		Short:         "Spool: a RocketMQ-compatible message broker",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(standaloneCmd(), namesrvCmd(), brokerCmd(), controllerCmd(), adminCmd(), benchCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "spool:", err)
		os.Exit(1)
	}
}
