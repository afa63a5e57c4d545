package aeronbench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes r as a table: the Aeron figures, and the native
// node's beside them where it measures the same thing.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "book %d orders, %d node(s), probes at %d/s; load average %.2f %.2f %.2f at the start, %.2f at the end; %d CPUs\n",
		r.Orders, r.Nodes, r.Rate, r.LoadAvg[0], r.LoadAvg[1], r.LoadAvg[2], r.LoadAvgEnd[0], r.NumCPU)
	fmt.Fprintln(tw, "measure\taeron cluster\tnative node (pauseless)\t")
	nat := func(f func() float64, format string) string {
		if r.Native == nil {
			return "-"
		}
		return fmt.Sprintf(format, f())
	}
	row := func(name, aeron, native string) { fmt.Fprintf(tw, "%s\t%s\t%s\t\n", name, aeron, native) }
	row("book built (orders/s)", fmt.Sprintf("%.0f", r.BuildPerS), nat(func() float64 { return float64(r.Native.Orders) / r.Native.PreloadSecs }, "%.0f"))
	row("snapshot take (ms)", fmt.Sprintf("%.1f (slowest member %.1f)", r.TakeMs, r.TakeMaxMs), nat(func() float64 { return r.Native.TakeMs }, "%.1f"))
	row("snapshot start to last ack (ms)", fmt.Sprintf("%.0f (leader's %.0f; ClusterTool %.0f)", r.SnapshotMs, r.LeaderSnapshotMs, r.ToolMs), nat(func() float64 { return r.Native.SnapshotMs }, "%.0f"))
	row("probe p99 without snapshot (ms)", fmt.Sprintf("%.2f", r.NoSnapshotP99Ms), nat(func() float64 { return r.Native.NoSnapshotP99Ms }, "%.2f"))
	row("client pause at the snapshot: worst (ms)", fmt.Sprintf("%.1f", r.PauseMaxMs), nat(func() float64 { return r.Native.PauseMsMax }, "%.2f"))
	row("client pause at the snapshot: p99 (ms)", fmt.Sprintf("%.1f (%d probes)", r.PauseP99Ms, r.PauseProbes), nat(func() float64 { return r.Native.PauseP99Ms }, "%.2f"))
	row("stop without a snapshot (s)", fmt.Sprintf("%.1f", r.StopS), "-")
	row("restart: restored / replayed / first answer (s)", fmt.Sprintf("%.1f / %.1f / %.1f (restore %.0f ms)", r.RestartRestoredS, r.RestartReplayedS, r.RestartFirstAnswerS, r.RestoreMs), "-")
	if r.Nodes == 3 {
		row("follower rejoin after kill -9 (s)", fmt.Sprintf("%.1f (restore %.0f ms)", r.FollowerRejoinS, r.FollowerRestoreMs), "-")
		row("failover after leader kill -9: leader / session / first answer (s)", fmt.Sprintf("%.1f / %.1f / %.1f", r.FailoverLeaderS, r.FailoverSessionS, r.FailoverFirstAnswerS), "-")
		row("worst round trip across the failover (ms)", fmt.Sprintf("%.0f (%d resent, %d duplicates)", r.FailoverWorstMs, r.Resent, r.Duplicates), "-")
	}
	row("commands, final state hash", fmt.Sprintf("%d, %s", r.Commands, r.StateHash), "-")
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Loaded {
		_, err := fmt.Fprintf(w, "WARNING: load average above %d CPUs: figures are upper bounds\n", r.NumCPU)
		return err
	}
	return nil
}
