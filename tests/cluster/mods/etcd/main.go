// Command etcd is etcd itself: this main only calls etcd's own entry point, so the
// version comes from tests/cluster/pins.env (ETCD_VERSION) through go.mod.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
