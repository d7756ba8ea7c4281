// etcd for the local cluster: the upstream server's own entry point, built from the
// published module (Debian's etcd is too old for a current API server).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
