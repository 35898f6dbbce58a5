/*-------------------------------------------------------------------------
 *
 * usercode.c
 *	  Does an UPDATE of a table run code that is not PostgreSQL's own?
 *
 * A claim that its transaction does not settle is written when the
 * transaction commits (pending.c), from a pre-commit callback: after
 * PostgreSQL has fired the transaction's deferred triggers and closed its
 * portals, and in no particular order with other callbacks (postgres_fdw
 * commits its remote transactions from its own).  Code of the table's
 * users must not run there: it may write a foreign table after its remote
 * commit, or queue a trigger nothing would fire.  So only a claim whose
 * UPDATE runs nothing but PostgreSQL's own code waits for the commit; any
 * other is written at once, inside the claim.
 *
 * An UPDATE of a table runs a user's code through: a trigger fired by an
 * UPDATE (a user's, a constraint trigger, a foreign key's), a rule, a
 * row-level security policy, a CHECK constraint, a generated column, an
 * index expression or predicate, or a column's type (a domain's
 * constraints, an enum's, range's or composite's functions); and the
 * same on an inheritance child or a partition.  Any function or type made
 * after initdb (an object id from FirstNormalObjectId up, an extension's
 * included) counts as a user's: the answer errs on the side of writing at
 * once.
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/usercode.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/transam.h"
#include "nodes/nodeFuncs.h"
#include "utils/rel.h"
#include "utils/relcache.h"

#include "usercode.h"

/* Is func_id not one of initdb's? (a check_functions_in_node checker) */
static bool
user_function(Oid func_id, void *context)
{
	return func_id >= FirstNormalObjectId;
}

/* Does expression node call a function, or use a type, not initdb's? */
static bool
user_code_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, user_function, context))
		return true;
	if (!IsA(node, List) && exprType(node) >= FirstNormalObjectId)
		return true;
	return expression_tree_walker(node, user_code_walker, context);
}

static bool
expression_runs_user_code(Node *node)
{
	return user_code_walker(node, NULL);
}

/* Does a trigger of rel fire on an UPDATE? */
static bool
has_update_triggers(Relation rel)
{
	TriggerDesc *t = rel->trigdesc;

	return t != NULL &&
		(t->trig_update_before_row || t->trig_update_after_row ||
		 t->trig_update_instead_row || t->trig_update_before_statement ||
		 t->trig_update_after_statement);
}

/* Is a column of rel of a type not initdb's, or generated? */
static bool
has_user_columns(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (desc->constr != NULL && desc->constr->has_generated_stored)
		return true;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && att->atttypid >= FirstNormalObjectId)
			return true;
	}
	return false;
}

/* Does a CHECK constraint of rel run a user's code? */
static bool
has_user_checks(Relation rel)
{
	TupleConstr *constr = RelationGetDescr(rel)->constr;

	for (int i = 0; constr != NULL && i < constr->num_check; i++)
		if (expression_runs_user_code(stringToNode(constr->check[i].ccbin)))
			return true;
	return false;
}

/* Does an index of rel have an expression or predicate of a user's code? */
static bool
has_user_indexes(Relation rel)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		found = false;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		found = expression_runs_user_code((Node *) RelationGetIndexExpressions(index)) ||
			expression_runs_user_code((Node *) RelationGetIndexPredicate(index));
		index_close(index, AccessShareLock);
		if (found)
			break;
	}
	list_free(indexes);
	return found;
}

/*
 * Does an UPDATE of table relid run code that is not PostgreSQL's own?
 * Opens the table (an AccessShareLock, kept to the transaction's end).
 */
bool
dlsm_update_runs_user_code(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	bool		found;

	found = rel->rd_rel->relkind != RELKIND_RELATION ||
		rel->rd_rel->relhassubclass || rel->rd_rel->relrowsecurity ||
		rel->rd_rules != NULL || has_update_triggers(rel) ||
		has_user_columns(rel) || has_user_checks(rel) ||
		has_user_indexes(rel);
	table_close(rel, NoLock);
	return found;
}
