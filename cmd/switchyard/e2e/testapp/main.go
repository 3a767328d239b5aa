// Command testapp is the one binary of the real-node test's images: the
// pod sandbox's process (pause), a backend that says which pod answered
// (serve), a prober that dials from inside a pod on request (prober), and
// an in-cluster API client (kube-check).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testapp pause | serve --tcp PORT --http PORT | prober --http PORT | kube-check")
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "pause":
		pause()
	case "serve":
		err = serve(flagValue(args, "--tcp"), flagValue(args, "--http"))
	case "prober":
		err = serve("", flagValue(args, "--http"))
	case "kube-check":
		err = kubeCheck()
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.WriteFile("/dev/termination-log", []byte(err.Error()), 0o644)
		os.Exit(1)
	}
}

// flagValue is the value after name in args ("" when absent).
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// identity is the pod's name (POD_NAME, from the downward API).
func identity() string {
	if n := os.Getenv("POD_NAME"); n != "" {
		return n
	}
	h, _ := os.Hostname()
	return h
}

// serve answers every line on the TCP port with "POD:PORT", and serves
// /healthz and /dial on the HTTP port, until SIGTERM.
func serve(tcpPort, httpPort string) error {
	if tcpPort != "" {
		l, err := net.Listen("tcp", ":"+tcpPort)
		if err != nil {
			return err
		}
		go acceptLines(l, identity()+":"+tcpPort)
	}
	if httpPort == "" {
		return errors.New("--http PORT is required")
	}
	srv := &http.Server{Addr: ":" + httpPort, Handler: mux(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func acceptLines(l net.Listener, answer string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
				if _, err := fmt.Fprintf(c, "%s\n", answer); err != nil {
					return
				}
			}
		}()
	}
}

func mux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	m.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, identity()) })
	m.HandleFunc("/dial", dial)
	return m
}

// dial: GET /dial?addr=HOST:PORT&timeout=MS connects from this pod, sends
// one line and returns the answer line as JSON {"answer", "error"}.
func dial(w http.ResponseWriter, r *http.Request) {
	timeout := time.Second
	if ms, err := time.ParseDuration(r.URL.Query().Get("timeout") + "ms"); err == nil && ms > 0 {
		timeout = ms
	}
	var res struct {
		Answer string `json:"answer"`
		Error  string `json:"error"`
	}
	c, err := net.DialTimeout("tcp", r.URL.Query().Get("addr"), timeout)
	if err == nil {
		c.SetDeadline(time.Now().Add(timeout))
		if _, err = fmt.Fprintf(c, "probe\n"); err == nil {
			var line string
			line, err = bufio.NewReader(c).ReadString('\n')
			res.Answer = strings.TrimSpace(line)
		}
		c.Close()
	}
	if err != nil {
		res.Error = classify(err)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(res)
}

func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return err.Error()
}

// kubeCheck reaches the API server with the in-cluster config (the
// kubernetes Service's ClusterIP, the service account's token and CA) and
// asks who it is.
func kubeCheck() error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	cfg.Timeout = 5 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		r, err := client.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err == nil {
			msg := fmt.Sprintf("reached %s as %s", cfg.Host, r.Status.UserInfo.Username)
			fmt.Println(msg)
			os.WriteFile("/dev/termination-log", []byte(msg), 0o644)
			return nil
		}
		fmt.Fprintln(os.Stderr, err)
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer from %s: %w", cfg.Host, err)
		}
		time.Sleep(2 * time.Second)
	}
}
