/* rdc_api: the API group and version the operator works in.
 *
 * cache.example.com/v1 is the CRD's storage version (docs/api-versions.md): informerd
 * lists and watches it, workerd reads, applies status and names it in owner references
 * and Events. v1alpha1 is still served for clients, converted by webhookd's /convert
 * (webhookd/conversion.h); the operator itself never asks for it.
 */
#ifndef RDC_API_H
#define RDC_API_H

#define RDC_API_GROUP "cache.example.com"
#define RDC_API_VERSION "v1"
#define RDC_GROUP_VERSION RDC_API_GROUP "/" RDC_API_VERSION
#define RDC_KIND "RedisCluster"
#define RDC_RESOURCE "redisclusters"

#endif
