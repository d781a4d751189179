package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ferry-bridge/ferry/config"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/observe"
)

// status prints what a running ferry serves on /status: a table per stream and recording,
// or the JSON itself; --watch refreshes it every second until Ctrl-C.
func status(args []string, stdout io.Writer) error {
	var path string
	var asJSON, watch bool
	if err := flags("status", args, func(fs *flag.FlagSet) {
		fs.StringVar(&path, "config", "", "configuration file (its http.listen is asked)")
		fs.BoolVar(&asJSON, "json", false, "print /status as JSON")
		fs.BoolVar(&watch, "watch", false, "refresh every second")
	}); err != nil {
		return err
	}
	cfg, err := loadConfig(path)
	if err != nil {
		return err
	}
	url := "http://" + cfg.HTTP.Listen + "/status"
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !watch {
		body, st, err := fetchStatus(ctx, url)
		if err != nil {
			return fmt.Errorf("%s: %w (is ferry running with this configuration?)", url, err)
		}
		showStatus(stdout, body, st, asJSON)
		if not := unwell(st, cfg); len(not) > 0 {
			return fmt.Errorf("not healthy: %s", strings.Join(not, "; "))
		}
		return nil
	}
	watchStatus(ctx, stdout, url, asJSON, time.Second)
	return nil
}

// unwell is what makes a running ferry's status unhealthy, for a script's exit status (as
// /healthz has it: observe.Unwell), and a configured stream the status does not have (the
// running ferry has another configuration).
func unwell(st *messages.Status, cfg *config.Config) []string {
	out := observe.Unwell(st)
	seen := map[string]bool{}
	for _, s := range st.Streams {
		seen[s.Name] = true
	}
	for _, s := range cfg.Streams {
		if !seen[s.Name] {
			out = append(out, s.Name+": not in the running ferry's status (does it run with this configuration?)")
		}
	}
	return out
}

// watchStatus shows the status every interval until ctx is done. A ferry that does not
// answer (restarting, say) is said so, in place of the table, and asked again. With asJSON
// it writes one JSON document after another, for a program to read (jq, say): no screen
// control, and a ferry that does not answer is a document with error and at_ms (as /status names it).
func watchStatus(ctx context.Context, stdout io.Writer, url string, asJSON bool, interval time.Duration) {
	for {
		body, st, err := fetchStatus(ctx, url)
		if ctx.Err() != nil {
			return
		}
		if !asJSON {
			fmt.Fprint(stdout, "\033[H\033[2J") // clear the screen: the table refreshes in place
		}
		switch {
		case err != nil && asJSON:
			// at_ms a string, as /status writes its 64-bit integers (protobuf's JSON mapping):
			// one field, one type, for the program reading them.
			doc, _ := json.Marshal(map[string]any{"error": fmt.Sprintf("%s: %v", url, err), "at_ms": strconv.FormatInt(time.Now().UnixMilli(), 10)})
			fmt.Fprintf(stdout, "%s\n", doc)
		case err != nil:
			fmt.Fprintf(stdout, "%s %s: %v (is ferry running with this configuration?); asking again every %s\n", time.Now().UTC().Format(time.RFC3339), url, err, interval)
		default:
			showStatus(stdout, body, st, asJSON)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// showStatus prints the status as JSON or as the table.
func showStatus(stdout io.Writer, body []byte, st *messages.Status, asJSON bool) {
	if asJSON {
		_, _ = stdout.Write(body)
		fmt.Fprintln(stdout)
		return
	}
	printStatus(stdout, st)
}

func fetchStatus(ctx context.Context, url string) ([]byte, *messages.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("%s: %s", resp.Status, body)
	}
	st := &messages.Status{}
	// A newer ferry's status may have fields this binary does not know: they are left out,
	// not a reason to call a running ferry not running.
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, st); err != nil {
		return nil, nil, err
	}
	return body, st, nil
}

// printStatus is the human view: one block per stream, one row per recording.
func printStatus(w io.Writer, st *messages.Status) {
	at := time.UnixMilli(st.AtMs)
	fmt.Fprintf(w, "ferry %s, %s\n", st.Version, at.UTC().Format(time.RFC3339))
	if c := st.Connection; c != nil && !c.Connected {
		fmt.Fprintf(w, "NOT CONNECTED to Aeron for %s (%d failed attempts): %s; the streams show what they last reported\n",
			at.Sub(time.UnixMilli(c.SinceMs)).Round(time.Second), c.FailedAttempts, c.Error)
	}
	for _, s := range st.Streams {
		health := "healthy"
		if !s.Healthy {
			health = "UNHEALTHY: " + s.Reason
		}
		fmt.Fprintf(w, "\nstream %s (%s): %s, %s, restarts %d\n", s.Name, s.Mode, s.State, health, s.Restarts)
		for _, wr := range s.Waiting {
			fmt.Fprintf(w, "  recording %d waits: %s\n", wr.RecordingId, waitingFor(wr))
		}
		for _, r := range s.Recordings {
			if r.Publishers != nil {
				fmt.Fprintf(w, "  publishers connected: %d\n", *r.Publishers)
			}
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  RECORDING\tSTOP\tRECORDED\tCOMMITTED\tCHECKPOINT\tLAG\tRATE/s\tETA\tPENDING\tACKED\tDUPS\tFAILED\tPRODUCER\tDEDUP\tLAST ACK\t")
		for _, r := range s.Recordings {
			stop := "live"
			switch {
			case r.StopPosition != nil:
				stop = fmt.Sprint(*r.StopPosition)
			case r.Completed:
				// Known from its checkpoint only (this run has not listed it: purged, or not
				// listed yet): its end is where ferry completed it.
				stop = opt(r.CommittedPosition)
			case s.Mode == "archive" && r.RecordedPosition == nil:
				stop = "?" // known from its checkpoint only, not listed yet: live or stopped, not known
			}
			switch {
			case r.Forgotten:
				stop = "gone, forgotten after " + opt(r.CommittedPosition)
			case r.Completed:
				stop += " (done)"
			}
			eta := "-"
			if r.EtaMs != nil {
				eta = (time.Duration(*r.EtaMs) * time.Millisecond).Round(100 * time.Millisecond).String()
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n", r.RecordingId, stop, opt(r.RecordedPosition), opt(r.CommittedPosition),
				opt(r.CheckpointedPosition), r.LagBytes, bytesText(r.RateBytesPerS), eta, r.PendingRecords, r.Acknowledged, r.Duplicates, r.Failed, orDash(r.Producer), orDash(r.Deduplication), ago(at, r.LastAckMs))
		}
		_ = tw.Flush()
		for _, f := range s.Failures {
			fmt.Fprintf(w, "  last %s failure %s ago: %s\n", f.Kind, at.Sub(time.UnixMilli(f.AtMs)).Round(time.Second), f.Message)
		}
	}
}

func bytesText(v float64) string {
	switch {
	case v >= 1<<20:
		return fmt.Sprintf("%.1fM", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1fk", v/(1<<10))
	}
	return fmt.Sprintf("%.0f", v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func opt(v *int64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

func ago(now time.Time, ms *int64) string {
	if ms == nil {
		return "never"
	}
	return now.Sub(time.UnixMilli(*ms)).Round(100*time.Millisecond).String() + " ago"
}

// waitingFor says what a waiting recording waits for.
func waitingFor(w *messages.WaitingRecording) string {
	switch w.Reason {
	case "stopped":
		return fmt.Sprintf("recording %d stopped, and every record of it is acknowledged first", w.Behind)
	case "extended":
		return fmt.Sprintf("recording %d was recorded again after it stopped (extended) and comes first, however long the extension lasts", w.Behind)
	case "quiet":
		return fmt.Sprintf("recording %d is live but has not grown since this one began (a restarted publisher's old recording?); for the restart grace at most", w.Behind)
	case "due":
		return "nothing any more; it publishes from the next listing"
	}
	return fmt.Sprintf("recording %d (%s)", w.Behind, w.Reason)
}
