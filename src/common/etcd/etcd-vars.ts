import { envVar, stringSchema, type EnvValues } from "../config/env-config";

/**
 * etcdAccessVars: how every role that talks to etcd authenticates to it, the same names
 * everywhere (beside each role's ETCD_ENDPOINTS). TLS with a client certificate (etcd's
 * --client-cert-auth takes the user from its CN), a user and password, or both; none is
 * plaintext without a user (a warning at start).
 */
export const etcdAccessVars = {
  etcdTlsCaFile: envVar("ETCD_TLS_CA_FILE", "", "a PEM file path, or empty", "CA certificate(s) etcd's server certificate must chain to; set: etcd is dialled over TLS (https)", stringSchema()),
  etcdTlsCertFile: envVar(
    "ETCD_TLS_CERT_FILE",
    "",
    "a PEM file path, or empty",
    "client certificate for etcd (with ETCD_TLS_KEY_FILE); etcd's --client-cert-auth takes the etcd user from its CN (re-read when it changes)",
    stringSchema(),
  ),
  etcdTlsKeyFile: envVar("ETCD_TLS_KEY_FILE", "", "a PEM file path, or empty", "the private key of ETCD_TLS_CERT_FILE", stringSchema()),
  etcdUsername: envVar("ETCD_USERNAME", "", "an etcd user name, or empty", "etcd user to authenticate as with a password (ETCD_PASSWORD_FILE or ETCD_PASSWORD)", stringSchema()),
  etcdPasswordFile: envVar("ETCD_PASSWORD_FILE", "", "a file path, or empty", "file holding ETCD_USERNAME's password (one line; keeps it out of a unit's Environment=)", stringSchema()),
  etcdPassword: envVar("ETCD_PASSWORD", "", "a password, or empty", "ETCD_USERNAME's password in the environment (prefer ETCD_PASSWORD_FILE)", stringSchema(), {
    secret: "value",
  }),
};

export type EtcdAccessValues = EnvValues<typeof etcdAccessVars>;
