package observe

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// The series /metrics exports, all read from the board at scrape time.
var (
	descHealthy      = prometheus.NewDesc("ferry_stream_healthy", "1 if the stream is healthy by the health rule, else 0.", []string{"stream"}, nil)
	descRestarts     = prometheus.NewDesc("ferry_stream_restarts_total", "Restarts of the stream's actors by its supervisor.", []string{"stream"}, nil)
	descFailureAt    = prometheus.NewDesc("ferry_stream_last_failure_timestamp_seconds", "When the last failure of a kind happened, Unix epoch seconds (as time() in PromQL).", []string{"stream", "kind"}, nil)
	descCommitted    = prometheus.NewDesc("ferry_recording_committed_position", "The contiguous acknowledged prefix of the recording, in bytes.", []string{"stream", "recording"}, nil)
	descCheckpointed = prometheus.NewDesc("ferry_recording_checkpointed_position", "The position the checkpoint store holds, in bytes.", []string{"stream", "recording"}, nil)
	descReplay       = prometheus.NewDesc("ferry_recording_replay_position", "The end of the last record read from the replay, in bytes.", []string{"stream", "recording"}, nil)
	descLag          = prometheus.NewDesc("ferry_recording_lag_bytes", "How far the committed position is behind what the archive recorded or the replay read, in bytes (lag_bytes in /status).", []string{"stream", "recording"}, nil)
	descPending      = prometheus.NewDesc("ferry_recording_pending_records", "Records read and not yet committed.", []string{"stream", "recording"}, nil)
	descPublished    = prometheus.NewDesc("ferry_recording_published_total", "Records handed to the publisher (a record a failed send of its epoch stopped is counted again when re-sent).", []string{"stream", "recording"}, nil)
	descAcknowledged = prometheus.NewDesc("ferry_recording_acknowledged_total", "Records Pulsar acknowledged as stored.", []string{"stream", "recording"}, nil)
	descDuplicates   = prometheus.NewDesc("ferry_recording_duplicates_total", "Records Pulsar acknowledged as already stored (not progress).", []string{"stream", "recording"}, nil)
	descFailed       = prometheus.NewDesc("ferry_recording_failed_total", "Records whose send Pulsar failed (not those skipped after it).", []string{"stream", "recording"}, nil)
	descRate         = prometheus.NewDesc("ferry_recording_commit_rate_bytes_per_second", "The committed position's recent speed.", []string{"stream", "recording"}, nil)
	descRecorded     = prometheus.NewDesc("ferry_recording_recorded_position", "How far the archive is known to have recorded, in bytes: where discovery last looked, or for a live recording where the replay read or Pulsar acknowledged since in this run, if further (recorded_position in /status).", []string{"stream", "recording"}, nil)
	descStoreWrites  = prometheus.NewDesc("ferry_store_writes_total", "Checkpoint store transactions that succeeded (a failed one is a checkpoint failure).", []string{"stream"}, nil)
	descStoreLatency = prometheus.NewDesc("ferry_store_last_write_seconds", "How long the last checkpoint store transaction took.", []string{"stream"}, nil)
	descDedup        = prometheus.NewDesc("ferry_recording_deduplication", "1 for the broker's deduplication of the recording's topic partition as its admin API last answered (state: enabled, disabled, unknown, unchecked), while the recording publishes; archive mode only. Anything but enabled is at least once, not effectively once.", []string{"stream", "recording", "state"}, nil)
	descPublishers   = prometheus.NewDesc("ferry_transport_publishers", "Transport mode: the publications the live subscription reads from now (publishers connected).", []string{"stream"}, nil)
	descConnected    = prometheus.NewDesc("ferry_aeron_connected", "1 while connected to the Aeron media driver (and archive), 0 while not; absent before the first attempt ended.", nil, nil)
)

// collector turns the board's snapshot into metrics at scrape time.
type collector struct{ b *Board }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHealthy, descRestarts, descFailureAt, descCommitted, descCheckpointed, descReplay, descLag, descPending, descPublished, descAcknowledged, descDuplicates, descFailed, descRate, descRecorded, descStoreWrites, descStoreLatency, descConnected, descPublishers, descDedup} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	snap := c.b.Snapshot()
	if conn := snap.Connection; conn != nil {
		connected := 0.0
		if conn.Connected {
			connected = 1
		}
		ch <- prometheus.MustNewConstMetric(descConnected, prometheus.GaugeValue, connected)
	}
	for _, s := range snap.Streams {
		healthy := 0.0
		if s.Healthy {
			healthy = 1
		}
		ch <- prometheus.MustNewConstMetric(descHealthy, prometheus.GaugeValue, healthy, s.Name)
		ch <- prometheus.MustNewConstMetric(descRestarts, prometheus.CounterValue, float64(s.Restarts), s.Name)
		ch <- prometheus.MustNewConstMetric(descStoreWrites, prometheus.CounterValue, float64(s.StoreWrites), s.Name)
		if s.LastStoreWriteUs != nil {
			ch <- prometheus.MustNewConstMetric(descStoreLatency, prometheus.GaugeValue, float64(*s.LastStoreWriteUs)/1e6, s.Name)
		}
		for _, f := range s.Failures {
			ch <- prometheus.MustNewConstMetric(descFailureAt, prometheus.GaugeValue, float64(f.AtMs)/1e3, s.Name, f.Kind)
		}
		for _, r := range s.Recordings {
			if r.Publishers != nil {
				ch <- prometheus.MustNewConstMetric(descPublishers, prometheus.GaugeValue, float64(*r.Publishers), s.Name)
			}
			id := strconv.FormatInt(r.RecordingId, 10)
			if r.CommittedPosition != nil {
				ch <- prometheus.MustNewConstMetric(descCommitted, prometheus.GaugeValue, float64(*r.CommittedPosition), s.Name, id)
			}
			if r.CheckpointedPosition != nil {
				ch <- prometheus.MustNewConstMetric(descCheckpointed, prometheus.GaugeValue, float64(*r.CheckpointedPosition), s.Name, id)
			}
			if r.ReplayPosition != nil {
				ch <- prometheus.MustNewConstMetric(descReplay, prometheus.GaugeValue, float64(*r.ReplayPosition), s.Name, id)
			}
			if r.CommittedPosition != nil || r.LagBytes > 0 {
				ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(r.LagBytes), s.Name, id)
			}
			ch <- prometheus.MustNewConstMetric(descRate, prometheus.GaugeValue, r.RateBytesPerS, s.Name, id)
			if r.RecordedPosition != nil {
				ch <- prometheus.MustNewConstMetric(descRecorded, prometheus.GaugeValue, float64(*r.RecordedPosition), s.Name, id)
			}
			if r.Deduplication != "" && !r.Completed {
				// A completed recording publishes nothing more: its state is history (kept
				// in /status), and an alert on it would not clear once the broker is fixed.
				ch <- prometheus.MustNewConstMetric(descDedup, prometheus.GaugeValue, 1, s.Name, id, r.Deduplication)
			}
			ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(r.PendingRecords), s.Name, id)
			ch <- prometheus.MustNewConstMetric(descPublished, prometheus.CounterValue, float64(r.Published), s.Name, id)
			ch <- prometheus.MustNewConstMetric(descAcknowledged, prometheus.CounterValue, float64(r.Acknowledged), s.Name, id)
			ch <- prometheus.MustNewConstMetric(descDuplicates, prometheus.CounterValue, float64(r.Duplicates), s.Name, id)
			ch <- prometheus.MustNewConstMetric(descFailed, prometheus.CounterValue, float64(r.Failed), s.Name, id)
		}
	}
}
