// Package notify owns telling the operator, on their desktop, that a
// request waits for their decision: one notification per request held for
// approval, naming its server, what it is (tool, prompt, upstream request)
// and the approval ID to decide, and never the request's arguments.
//
// On Linux and the BSDs it calls org.freedesktop.Notifications.Notify on
// the D-Bus session bus; on macOS it runs osascript's "display
// notification", the text passed as arguments, never through a shell or
// into the script. Names chosen by an upstream or the operator are shown
// escaped ([safetext.Show]): no control, bidi, zero-width or markup
// character reaches the notification raw.
//
// Sending is off the request's path: [Notifier.Waiting] queues the note in
// a bounded queue and returns at once; one goroutine sends. A full queue
// drops the note, a failure to send never reaches the request, and each of
// the two is logged once for the Notifier's life, not per request.
package notify
