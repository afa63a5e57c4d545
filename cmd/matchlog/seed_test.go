package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// javaSeeded is the recording.log Aeron's
// ClusterToolOperator.seedRecordingLogFromSnapshot writes for the old file
// old when its latest valid set is recs (service N-1 … 0, then the
// consensus module's): for each, the 64-byte entry of its valid SNAPSHOT
// with recordingId, leadershipTermId, timestamp, serviceId and type kept,
// termBaseLogPosition and logPosition 0, and zeros after the type
// (writeEntryToBuffer into a fresh buffer), in that order.
func javaSeeded(t *testing.T, old []byte, recs ...int64) []byte {
	t.Helper()
	le := binary.LittleEndian
	var out []byte
	for _, id := range recs {
		found := false
		for off := 0; off+64 <= len(old); off += 64 {
			e := old[off : off+64]
			if int64(le.Uint64(e)) == id && le.Uint32(e[44:]) == 1 {
				b := bytes.Clone(e)
				clear(b[16:32])
				clear(b[48:64])
				out = append(out, b...)
				found = true
			}
		}
		if !found {
			t.Fatalf("no valid SNAPSHOT entry of recording %d", id)
		}
	}
	return out
}

// seedDirs are the directories the seed tests work on: a copy of member 0
// of the Aeron three-members fixture (latest set: recordings 5 and 6) and
// a native node directory with two sets (latest: recordings 3 and 4).
func seedDirs(t *testing.T) []struct {
	name string
	dir  string
	recs []int64
} {
	return []struct {
		name string
		dir  string
		recs []int64
	}{
		{"aeron three-members member 0", copyThreeMember(t, "0"), []int64{5, 6}},
		{"native node", copyNode(t, buildTwoSetDir(t)), []int64{3, 4}},
	}
}

// Without --i-understand-this-rebases-to-zero the command prints what it
// would remove, exits 1 and changes nothing.
func TestSeedRecordingLogRefusedWithoutFlag(t *testing.T) {
	for _, c := range seedDirs(t) {
		before := digests(t, c.dir)
		code, out, errb := runCLI(t, "cluster", "seed-recording-log-from-snapshot", "--dir", c.dir)
		if code != 1 || !strings.Contains(errb, "refused: nothing was changed") || !strings.Contains(errb, "--i-understand-this-rebases-to-zero") {
			t.Errorf("%s: exit %d, stderr %q", c.name, code, errb)
		}
		for _, w := range []string{"would rebase (nothing changed)", "removed entries:", "#0 TERM recording 0 term 0",
			"a new member can no longer catch up from position 0 by replay", "no entry names log recording 0 any more"} {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output does not say %q:\n%s", c.name, w, out)
			}
		}
		sameDigests(t, c.name+": refused seed", before, digests(t, c.dir))
	}
}

// With the flag: recording.log.bak is the old file byte for byte, and the
// new recording.log is what Aeron's seedRecordingLogFromSnapshot writes
// (and, where AERON_CLASSPATH is set, byte for byte what real Aeron's
// ClusterTool writes on a copy). A second run refuses: the backup exists.
func TestSeedRecordingLogFromSnapshot(t *testing.T) {
	for _, c := range seedDirs(t) {
		rl := filepath.Join(c.dir, "cluster", "recording.log")
		old := mustRead(t, rl)
		var javaCopy string
		if os.Getenv("AERON_CLASSPATH") != "" {
			javaCopy = copyNode(t, c.dir)
		}
		out := mustCLI(t, "cluster", "seed-recording-log-from-snapshot", "--dir", c.dir, "--i-understand-this-rebases-to-zero", "--json")
		var s seedJSON
		mustJSON(t, out, &s)
		if !s.Seeded || len(s.Kept) != 2 || s.Kept[0].LogPosition != 0 || len(s.Removed) == 0 || len(s.FutureBlankNodes) < 2 {
			t.Errorf("%s: %+v", c.name, s)
		}
		if bak := mustRead(t, rl+".bak"); !bytes.Equal(bak, old) {
			t.Errorf("%s: recording.log.bak is not the old file", c.name)
		}
		if got, want := mustRead(t, rl), javaSeeded(t, old, c.recs...); !bytes.Equal(got, want) {
			t.Errorf("%s: new recording.log\n%x\nwant (Aeron's seedRecordingLogFromSnapshot)\n%x", c.name, got, want)
		}
		if javaCopy != "" {
			cmd := exec.Command("java", append(strings.Fields(os.Getenv("AERON_JVM_OPTS")), "-cp", os.Getenv("AERON_CLASSPATH"),
				"io.aeron.cluster.ClusterTool", filepath.Join(javaCopy, "cluster"), "seed-recording-log-from-snapshot")...)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("ClusterTool: %v\n%s", err, b)
			}
			if got, want := mustRead(t, rl), mustRead(t, filepath.Join(javaCopy, "cluster", "recording.log")); !bytes.Equal(got, want) {
				t.Errorf("%s: new recording.log\n%x\nreal ClusterTool's\n%x", c.name, got, want)
			}
		} else {
			t.Logf("%s: AERON_CLASSPATH unset: not compared with real ClusterTool", c.name)
		}
		before := digests(t, c.dir)
		failCLI(t, "recording.log.bak is there; it is never overwritten", "cluster", "seed-recording-log-from-snapshot", "--dir", c.dir, "--i-understand-this-rebases-to-zero")
		sameDigests(t, c.name+": second seed", before, digests(t, c.dir))
	}
}

// The command refuses, changing nothing, a live node, a latest set that
// does not load, and a set that misses a configured service.
func TestSeedRecordingLogRefusals(t *testing.T) {
	live := copyNode(t, buildTwoSetDir(t))
	tn := openTestNode(t, live, nil)
	before := digests(t, live)
	failCLI(t, "seed-recording-log-from-snapshot changes nothing while a node runs", "cluster", "seed-recording-log-from-snapshot", "--dir", live, "--i-understand-this-rebases-to-zero")
	tn.close()
	after := digests(t, live)
	for k := range after { // the node's own close rewrote its mark files
		if strings.HasSuffix(k, "recording.log") || strings.HasSuffix(k, "recording.log.bak") {
			if before[k] != after[k] {
				t.Errorf("live: %s changed", k)
			}
		}
	}
	damaged := copyNode(t, buildTwoSetDir(t))
	damageEngineSnapshot(t, damaged, 3)
	before = digests(t, damaged)
	failCLI(t, "the snapshot set at log position 297568 (term 0) in "+filepath.Join(damaged, "cluster", "recording.log")+" does not load",
		"cluster", "seed-recording-log-from-snapshot", "--dir", damaged, "--i-understand-this-rebases-to-zero")
	sameDigests(t, "damaged", before, digests(t, damaged))
	m0 := copyThreeMember(t, "0")
	before = digests(t, m0)
	failCLI(t, "is followed by the snapshots of 1 service(s), not 2 (--services)",
		"cluster", "seed-recording-log-from-snapshot", "--dir", m0, "--services", "2", "--i-understand-this-rebases-to-zero")
	sameDigests(t, "--services 2", before, digests(t, m0))
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v:\n%s", err, s)
	}
}
