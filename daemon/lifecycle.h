/*
 * lifecycle.h - the model loaded and reloaded (lifecycle.c).
 */
#ifndef GS_DAEMON_LIFECYCLE_H
#define GS_DAEMON_LIFECYCLE_H

struct gs_node;

/* Reloads the model from the store after a failed commit (node->resync). */
void gs__node_resync(struct gs_node *node);

#endif
