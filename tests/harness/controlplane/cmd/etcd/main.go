// Command etcd runs a single-member etcd on loopback for the test control plane.
// It uses the embed package instead of etcdmain so the binary stays small and
// every listener is explicit: nothing may bind outside 127.0.0.1.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "etcd:", err)
		os.Exit(1)
	}
}

func run() error {
	dataDir := flag.String("data-dir", "", "directory for the member's data (required)")
	clientPort := flag.Int("client-port", 0, "loopback port for clients (required)")
	peerPort := flag.Int("peer-port", 0, "loopback port for the (unused) peer listener (required)")
	noFsync := flag.Bool("unsafe-no-fsync", false, "skip fsync: test data is disposable")
	flag.Parse()
	if *dataDir == "" || *clientPort == 0 || *peerPort == 0 {
		return fmt.Errorf("--data-dir, --client-port and --peer-port are required")
	}
	cfg, err := config(*dataDir, *clientPort, *peerPort, *noFsync)
	if err != nil {
		return err
	}
	return serve(cfg)
}

func config(dataDir string, clientPort, peerPort int, noFsync bool) (*embed.Config, error) {
	client, err := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", clientPort))
	if err != nil {
		return nil, err
	}
	// A single member still needs a peer listener; pin it to loopback too.
	peer, err := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", peerPort))
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "hetgitops"
	cfg.Dir = dataDir
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = noFsync
	cfg.LogLevel = "warn"
	return cfg, nil
}

func serve(cfg *embed.Config) error {
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		return fmt.Errorf("server not ready after 60s")
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-stop:
		return nil
	case err := <-e.Err():
		return err
	}
}
