package demo

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"time"
)

// Machine is what a run's figures depend on besides the code: when and
// where it ran, and how loaded the machine was.
type Machine struct {
	// Date is when the run started (UTC, RFC 3339).
	Date string `json:"date"`
	// GoVersion, OS and Arch of the build.
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	// CPUModel is the processor's name as the system reports it (empty
	// when it does not).
	CPUModel string `json:"cpu_model"`
}

func thisMachine(now time.Time) Machine {
	return Machine{Date: now.UTC().Format(time.RFC3339), GoVersion: runtime.Version(), OS: runtime.GOOS,
		Arch: runtime.GOARCH, CPUModel: cpuModel()}
}

// cpuModel reads the first "model name" of /proc/cpuinfo (Linux), else "".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
