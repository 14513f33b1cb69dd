/**
 * CLIENT_IDENTITY_HEADER carries, on RequestTaskSlot, the identity key of the client a
 * Coordinator reserves for. A Worker believes it only from a peer with a coordinator certificate;
 * from anyone else the call is refused before the header is read.
 */
export const CLIENT_IDENTITY_HEADER = "x-blockx-client-identity";
