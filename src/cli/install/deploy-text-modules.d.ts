// deploy/systemd files are imported as text (`with { type: "text" }`) and embedded in the binary.
declare module "*.service" {
  const text: string;
  export default text;
}
declare module "*.env" {
  const text: string;
  export default text;
}
