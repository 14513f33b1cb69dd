/**
 * splitListenAddr turns ":8080" into 0.0.0.0:8080 and "[::1]:80" into ::1 and 80. The
 * address was validated by the config schema already.
 */
export function splitListenAddr(addr: string): { host: string; port: number } {
  const i = addr.lastIndexOf(":");
  let host = addr.slice(0, i);
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  return { host: host === "" ? "0.0.0.0" : host, port: Number(addr.slice(i + 1)) };
}

/** grpcBindAddr is the form grpc-js's bindAsync wants ("0.0.0.0:8080", "[::1]:80"). */
export function grpcBindAddr(addr: string): string {
  const { host, port } = splitListenAddr(addr);
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}
