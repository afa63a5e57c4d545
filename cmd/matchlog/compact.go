package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// compactJSON is the output of `archive compact --json`.
type compactJSON struct {
	Catalog      catalogCompactJSON       `json:"catalog"`
	RecordingLog *recordingLogCompactJSON `json:"recording_log,omitempty" doc:"absent for an archive with no cluster/recording.log beside it"`
}

type catalogCompactJSON struct {
	Dropped         []compactEntryJSON `json:"dropped" doc:"entries removed, in file order"`
	Kept            int                `json:"kept"`
	NextRecordingID int64              `json:"next_recording_id" doc:"unchanged: no id is reused"`
	UsedBefore      int64              `json:"used_bytes_before"`
	UsedAfter       int64              `json:"used_bytes_after"`
	Capacity        int64              `json:"capacity" doc:"the file's length, unchanged"`
	RemovedFiles    []string           `json:"removed_files" doc:"segment files and indexes unlinked with dropped entries"`
	LeftoverRemoved string             `json:"leftover_removed,omitempty" doc:"an interrupted compaction's temporary file, removed"`
}

type compactEntryJSON struct {
	RecordingID int64  `json:"recording_id"`
	State       string `json:"state"`
	Offset      int64  `json:"offset" doc:"where it was"`
}

type recordingLogCompactJSON struct {
	Dropped         []recordinglog.JSONEntry `json:"dropped" doc:"entries removed, with their old index and offset"`
	Kept            int                      `json:"kept"`
	SizeBefore      int64                    `json:"bytes_before"`
	SizeAfter       int64                    `json:"bytes_after"`
	LeftoverRemoved string                   `json:"leftover_removed,omitempty"`
}

// archiveCompact compacts the catalog of the archive f.dir, and first the
// recording.log beside it when it is a node's archive.
func archiveCompact(f *archiveFlags, stdout io.Writer) error {
	if err := refuseLive(f.dir); err != nil {
		return err
	}
	opts := archive.CompactOptions{Invalid: f.invalid}
	node := filepath.Dir(f.dir)
	var out compactJSON
	if _, err := os.Stat(filepath.Join(node, cluster.ClusterDirName, recordinglog.FileName)); err == nil {
		if filepath.Base(f.dir) != cluster.ArchiveDirName {
			return fmt.Errorf("%s has cluster/recording.log beside it, but is not named archive/: compact cannot read the node; "+
				"copy the node into a directory with cluster/ and archive/", f.dir)
		}
		if err := refuseLiveNode(node, "archive compact"); err != nil {
			return err
		}
		res, err := cluster.CompactDir(vfs.Default, node, opts)
		if res != nil && res.RecordingLog != nil {
			r := res.RecordingLog
			out.RecordingLog = &recordingLogCompactJSON{Dropped: recordinglog.ToJSON(r.Dropped).Entries, Kept: r.Kept,
				SizeBefore: r.SizeBefore, SizeAfter: r.SizeAfter, LeftoverRemoved: res.RemovedLogTemp}
		}
		if err != nil {
			return err
		}
		out.Catalog = catalogJSON(res.Catalog)
	} else {
		res, err := archive.CompactCatalogDir(vfs.Default, f.dir, opts)
		if err != nil {
			return err
		}
		out.Catalog = catalogJSON(res)
	}
	if f.jsonOut {
		return writeJSON(stdout, out)
	}
	c := out.Catalog
	if rl := out.RecordingLog; rl != nil {
		if rl.LeftoverRemoved != "" {
			fmt.Fprintf(stdout, "removed %s, left by an interrupted compaction (recording.log was the old file)\n", rl.LeftoverRemoved)
		}
		fmt.Fprintf(stdout, "recording.log: dropped %d entries, kept %d, %d -> %d bytes\n", len(rl.Dropped), rl.Kept, rl.SizeBefore, rl.SizeAfter)
		for _, e := range rl.Dropped {
			valid := ""
			if !e.Valid {
				valid = " invalid"
			}
			fmt.Fprintf(stdout, "  #%d at %d: %s%s recording %d term %d log position %d service %d\n",
				e.EntryIndex, e.Offset, e.Type, valid, e.RecordingID, e.LeadershipTermID, e.LogPosition, e.ServiceID)
		}
	}
	if c.LeftoverRemoved != "" {
		fmt.Fprintf(stdout, "removed %s, left by an interrupted compaction (the catalog was the old file)\n", c.LeftoverRemoved)
	}
	fmt.Fprintf(stdout, "catalog: dropped %d entries, kept %d; entries end at %d bytes (was %d) of %d; nextRecordingId %d\n",
		len(c.Dropped), c.Kept, c.UsedAfter, c.UsedBefore, c.Capacity, c.NextRecordingID)
	for _, e := range c.Dropped {
		fmt.Fprintf(stdout, "  recording %d %s (at offset %d)\n", e.RecordingID, e.State, e.Offset)
	}
	for _, n := range c.RemovedFiles {
		fmt.Fprintf(stdout, "  removed %s\n", n)
	}
	return nil
}

func catalogJSON(r *archive.CatalogCompaction) catalogCompactJSON {
	c := catalogCompactJSON{Dropped: []compactEntryJSON{}, Kept: r.Kept, NextRecordingID: r.NextRecordingID, UsedBefore: r.UsedBefore,
		UsedAfter: r.UsedAfter, Capacity: r.Capacity, RemovedFiles: r.RemovedFiles, LeftoverRemoved: r.LeftoverRemoved}
	if c.RemovedFiles == nil {
		c.RemovedFiles = []string{}
	}
	for _, e := range r.Dropped {
		c.Dropped = append(c.Dropped, compactEntryJSON{RecordingID: e.Descriptor.RecordingID, State: e.State.String(), Offset: e.Offset})
	}
	return c
}
