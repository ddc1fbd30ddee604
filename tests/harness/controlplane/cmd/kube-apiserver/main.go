// Command kube-apiserver is the upstream API server, built from the pinned k8s.io/kubernetes
// module so the e2e tests validate manifests against a real server (CEL, OpenAPI, RBAC).
package main

import (
	"os"
	_ "time/tzdata" // upstream links it for CronJob time zones; keep the binary equivalent

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json, as upstream
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as upstream
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
