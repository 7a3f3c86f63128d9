package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolmq/spool/internal/auth"
	"github.com/spoolmq/spool/remoting"
	"github.com/spoolmq/spool/remoting/transport"
)

// adminCreds signs every request of spool admin when an access key is
// given (--accessKey/--secretKey), as mqadmin's AclClientRPCHook does.
var adminCreds auth.Credentials

// signAdmin signs req with adminCreds, if any.
func signAdmin(req *remoting.Command) {
	if adminCreds.AccessKey == "" {
		return
	}
	if req.ExtFields == nil {
		req.ExtFields = map[string]string{}
	}
	auth.SignRequest(req.ExtFields, req.Body, req.Version, adminCreds)
}

// addAuthCommands adds the signing flags and mqadmin's user and ACL
// commands (createUser ... listAcl) to spool admin.
func addAuthCommands(admin *cobra.Command, namesrv *string) {
	admin.PersistentFlags().StringVar(&adminCreds.AccessKey, "accessKey", "", "sign requests as this user (default $SPOOL_ACCESS_KEY)")
	admin.PersistentFlags().StringVar(&adminCreds.SecretKey, "secretKey", "", "the user's password (default $SPOOL_SECRET_KEY)")

	// targets resolves -b (one broker) or -c (every master of the
	// cluster, through the name servers).
	type target struct{ broker, cluster string }
	run := func(tg *target, fn func(cli *transport.Client, addr string) error) func(*cobra.Command, []string) error {
		return func(*cobra.Command, []string) error {
			if adminCreds.AccessKey == "" {
				adminCreds.AccessKey = os.Getenv("SPOOL_ACCESS_KEY")
			}
			if adminCreds.SecretKey == "" {
				adminCreds.SecretKey = os.Getenv("SPOOL_SECRET_KEY")
			}
			cli := transport.NewClient(transport.ClientConfig{DialTimeout: 5 * time.Second})
			defer cli.Close()
			if tg.broker != "" {
				return fn(cli, tg.broker)
			}
			if tg.cluster == "" {
				return errors.New("give -b BROKER_ADDR or -c CLUSTER")
			}
			ns := *namesrv
			if ns == "" {
				ns = os.Getenv("NAMESRV_ADDR")
			}
			if ns == "" {
				return errors.New("give -n NAMESRV_ADDR with -c")
			}
			brokers, err := clusterBrokers(cli, splitNamesrv(ns))
			if err != nil {
				return err
			}
			names := make([]string, 0, len(brokers))
			for n := range brokers {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if err := fn(cli, brokers[n]); err != nil {
					return err
				}
			}
			return nil
		}
	}
	newCmd := func(use, short string) (*cobra.Command, *target) {
		tg := &target{}
		c := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs}
		c.Flags().StringVarP(&tg.broker, "brokerAddr", "b", "", "the broker's address")
		c.Flags().StringVarP(&tg.cluster, "clusterName", "c", "", "every master broker of this cluster")
		return c, tg
	}
	send := func(cli *transport.Client, addr string, code int32, ext map[string]string, body any) (*remoting.Command, error) {
		var b []byte
		if body != nil {
			var err error
			if b, err = json.Marshal(body); err != nil {
				return nil, err
			}
		}
		return call(cli, addr, remoting.NewRequest(code, ext, b))
	}

	var user auth.UserInfo
	userCmd := func(use, short string, code int32, withBody bool) *cobra.Command {
		c, tg := newCmd(use, short)
		c.Flags().StringVarP(&user.Username, "username", "u", "", "the user's name")
		if withBody {
			c.Flags().StringVarP(&user.Password, "password", "p", "", "the user's password")
			c.Flags().StringVarP(&user.UserType, "userType", "t", "", "Super or Normal")
			if code == remoting.AuthUpdateUser {
				c.Flags().StringVarP(&user.UserStatus, "userStatus", "s", "", "enable or disable")
			}
		}
		_ = c.MarkFlagRequired("username")
		c.RunE = run(tg, func(cli *transport.Client, addr string) error {
			var body any
			if withBody {
				body = user
			}
			resp, err := send(cli, addr, code, map[string]string{auth.HeaderUsername: user.Username}, body)
			if err != nil {
				return err
			}
			if len(resp.Body) > 0 {
				fmt.Printf("%s: %s\n", addr, resp.Body)
			} else {
				fmt.Printf("%s: %s %s done\n", addr, use, user.Username)
			}
			return nil
		})
		return c
	}
	listUser, lu := newCmd("listUser", "list the users of a broker")
	var filter string
	listUser.Flags().StringVarP(&filter, "filter", "f", "", "only users whose name contains this")
	listUser.RunE = run(lu, func(cli *transport.Client, addr string) error {
		resp, err := send(cli, addr, remoting.AuthListUser, map[string]string{auth.HeaderFilter: filter}, nil)
		if err == nil {
			fmt.Printf("%s: %s\n", addr, resp.Body)
		}
		return err
	})

	var subject, resources, actions, decision, sourceIPs string
	aclCmd := func(use, short string, code int32) *cobra.Command {
		c, tg := newCmd(use, short)
		c.Flags().StringVarP(&subject, "subject", "s", "", "the subject, User:<name>")
		c.Flags().StringVarP(&resources, "resources", "r", "", "resources, ','-separated: Cluster, Topic:<name>, Group:<name> (a trailing * for a prefix, * for all)")
		if code != remoting.AuthDeleteACL {
			c.Flags().StringVarP(&actions, "actions", "a", "", "actions, ','-separated: Pub, Sub, Create, Update, Delete, Get, List, All")
			c.Flags().StringVarP(&decision, "decision", "d", "", "Allow or Deny")
			c.Flags().StringVarP(&sourceIPs, "sourceIp", "i", "", "source addresses or CIDR ranges, ','-separated")
			_ = c.MarkFlagRequired("resources")
			_ = c.MarkFlagRequired("actions")
			_ = c.MarkFlagRequired("decision")
		}
		_ = c.MarkFlagRequired("subject")
		c.RunE = run(tg, func(cli *transport.Client, addr string) error {
			if code == remoting.AuthDeleteACL {
				rs := split(resources)
				if len(rs) == 0 {
					rs = []string{""}
				}
				for _, r := range rs {
					ext := map[string]string{auth.HeaderSubject: subject}
					if r != "" {
						ext[auth.HeaderResource] = r
					}
					if _, err := send(cli, addr, code, ext, nil); err != nil {
						return err
					}
				}
				fmt.Printf("%s: %s %s done\n", addr, use, subject)
				return nil
			}
			pi := auth.PolicyInfo{PolicyType: "Custom"}
			for _, r := range split(resources) {
				pi.Entries = append(pi.Entries, auth.PolicyEntryInfo{Resource: r, Actions: split(actions),
					Decision: decision, SourceIps: split(sourceIPs)})
			}
			body := auth.AclInfo{Subject: subject, Policies: []auth.PolicyInfo{pi}}
			if _, err := send(cli, addr, code, map[string]string{auth.HeaderSubject: subject}, body); err != nil {
				return err
			}
			fmt.Printf("%s: %s %s done\n", addr, use, subject)
			return nil
		})
		return c
	}
	getACL, ga := newCmd("getAcl", "show the ACL of a subject")
	getACL.Flags().StringVarP(&subject, "subject", "s", "", "the subject, User:<name>")
	_ = getACL.MarkFlagRequired("subject")
	getACL.RunE = run(ga, func(cli *transport.Client, addr string) error {
		resp, err := send(cli, addr, remoting.AuthGetACL, map[string]string{auth.HeaderSubject: subject}, nil)
		if err == nil {
			fmt.Printf("%s: %s\n", addr, resp.Body)
		}
		return err
	})
	listACL, la := newCmd("listAcl", "list the ACLs of a broker")
	var subjectFilter, resourceFilter string
	listACL.Flags().StringVarP(&subjectFilter, "subject", "s", "", "only subjects containing this")
	listACL.Flags().StringVarP(&resourceFilter, "resource", "r", "", "only ACLs with a resource containing this")
	listACL.RunE = run(la, func(cli *transport.Client, addr string) error {
		resp, err := send(cli, addr, remoting.AuthListACL, map[string]string{
			auth.HeaderSubjectFilter: subjectFilter, auth.HeaderResourceFilter: resourceFilter}, nil)
		if err == nil {
			fmt.Printf("%s: %s\n", addr, resp.Body)
		}
		return err
	})

	admin.AddCommand(
		userCmd("createUser", "create a user", remoting.AuthCreateUser, true),
		userCmd("updateUser", "change a user's password, type or status", remoting.AuthUpdateUser, true),
		userCmd("deleteUser", "delete a user", remoting.AuthDeleteUser, false),
		userCmd("getUser", "show a user", remoting.AuthGetUser, false),
		listUser,
		aclCmd("createAcl", "create a subject's ACL", remoting.AuthCreateACL),
		aclCmd("updateAcl", "merge entries into a subject's ACL", remoting.AuthUpdateACL),
		aclCmd("deleteAcl", "delete a subject's ACL, or its entries of some resources", remoting.AuthDeleteACL),
		getACL, listACL)
}

// split is s cut at commas, trimmed, empty parts left out.
func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
