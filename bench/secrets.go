package bench

import (
	"errors"
	"strings"

	"github.com/redmux/redmux/internal/nodeaddr"
)

// secrets are the passwords no output may show: -password's,
// $REDMUX_PASSWORD's and those in -nodes URLs (escaped and not).
type secrets []string

// hide replaces every secret in s with "***".
func (ss secrets) hide(s string) string {
	for _, pw := range ss {
		s = redact(s, pw)
	}
	return s
}

// hideErr makes sure no error text carries a secret: err itself when it
// carries none (errors.Is still works), else an error of its hidden text.
func (ss secrets) hideErr(err error) error {
	if err == nil {
		return nil
	}
	msg := ss.hide(err.Error())
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

// redact removes one password from a text (a server's, should it ever echo
// it, or an error's).
func redact(s, password string) string {
	if password == "" {
		return s
	}
	return strings.ReplaceAll(s, password, "***")
}

// passwordsIn returns every password a command line may carry: the
// environment's and each -password flag's value (the parser may stop
// before it reaches them).
func passwordsIn(args []string, getenv func(string) string) secrets {
	var out secrets
	if getenv != nil {
		if pw := getenv(envPassword); pw != "" {
			out = append(out, pw)
		}
	}
	urls := func(list string) {
		for _, a := range splitNodes(list) {
			out = append(out, nodeSecrets(strings.TrimSpace(a))...)
		}
	}
	for i, a := range args {
		switch {
		case a == "-nodes" || a == "--nodes":
			if i+1 < len(args) {
				urls(args[i+1])
			}
		case strings.HasPrefix(a, "-nodes=") || strings.HasPrefix(a, "--nodes="):
			urls(a[strings.IndexByte(a, '=')+1:])
		case a == "-password" || a == "--password":
			if i+1 < len(args) && args[i+1] != "" {
				out = append(out, args[i+1])
			}
		case strings.HasPrefix(a, "-password=") || strings.HasPrefix(a, "--password="):
			if v := a[strings.IndexByte(a, '=')+1:]; v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// commandLine renders args as a shell command, with any password replaced
// (-password's value, and the password of every URL in -nodes).
func commandLine(args []string) string {
	out := []string{"redmux-bench"}
	hide, nodes := false, false
	for _, a := range args {
		switch {
		case hide:
			a, hide = "***", false
		case nodes:
			a, nodes = hideURLPasswords(a), false
		case a == "-password" || a == "--password":
			hide = true
		case strings.HasPrefix(a, "-password=") || strings.HasPrefix(a, "--password="):
			a = a[:strings.IndexByte(a, '=')+1] + "***"
		case a == "-nodes" || a == "--nodes":
			nodes = true
		case strings.HasPrefix(a, "-nodes=") || strings.HasPrefix(a, "--nodes="):
			a = a[:strings.IndexByte(a, '=')+1] + hideURLPasswords(a[strings.IndexByte(a, '=')+1:])
		}
		out = append(out, shellQuote(a))
	}
	return strings.Join(out, " ")
}

// hideURLPasswords replaces the passwords of every URL in a -nodes list
// (its user information's and its sentinel_password options') by ***,
// keeping the rest (options included) as given.
func hideURLPasswords(list string) string {
	parts := splitNodes(list)
	for i, a := range parts {
		parts[i] = nodeaddr.HideURLSecrets(a)
	}
	for i, a := range parts {
		// What a malformed address may show of a password (its run
		// fails before it is recorded, but a usage error may print it).
		if strings.Contains(a, "://") && suspectPort(a) != "" || !strings.Contains(a, "://") && strings.Contains(a, "@") {
			parts[i] = shownNode(a)
		}
	}
	return strings.Join(parts, ",")
}

// secrets returns every password the configuration holds: -password's
// and those of -nodes URLs, for scrubbing error texts.
func (c *Config) secrets() secrets {
	var out secrets
	if c.Password != "" {
		out = append(out, c.Password)
	}
	for _, a := range c.Nodes {
		out = append(out, nodeSecrets(a)...)
	}
	return out
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
