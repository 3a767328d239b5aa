package ofconn

import (
	"io"
	"strings"

	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"
)

// ofnet logs through the global logrus logger, a line per reconnect
// attempt among others. Send it to klog instead: OpenFlow error replies
// as errors, everything else at verbosity 2.
func init() {
	logrus.SetOutput(io.Discard)
	logrus.SetLevel(logrus.InfoLevel)
	logrus.AddHook(klogHook{})
}

type klogHook struct{}

func (klogHook) Levels() []logrus.Level { return logrus.AllLevels }

func (klogHook) Fire(e *logrus.Entry) error {
	msg := strings.TrimSpace(e.Message)
	if e.Level <= logrus.ErrorLevel && strings.Contains(msg, "error") && strings.Contains(msg, "OpenFlow") {
		klog.ErrorS(nil, "Switch reported an OpenFlow error", "detail", msg)
		return nil
	}
	klog.V(2).InfoS("ofnet", "level", e.Level.String(), "msg", msg)
	return nil
}
