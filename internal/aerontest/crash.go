package aerontest

import "fmt"

// Crash kills the process with SIGKILL, as a crash would end it (no
// orderly close: Aeron leaves an active recording's stop position -1 and
// its mark files active), and waits until it has ended.
func (p *Process) Crash() error {
	var err error
	p.once.Do(func() {
		select {
		case <-p.done:
			err = fmt.Errorf("%s had ended before the kill: %v; output:\n%s", p.name, p.err, p.Output())
			return
		default:
		}
		err = p.cmd.Process.Kill()
		<-p.done
	})
	return err
}
