from django.db import models


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    CONTRIBUTOR = "contributor", "Contributor"
    READER = "reader", "Reader"


# Each role may do everything the roles below it may do.
ROLE_RANK = {Role.READER: 1, Role.CONTRIBUTOR: 2, Role.OWNER: 3}


class AuditAction(models.TextChoices):
    CREATE = "create", "Create"
    UPDATE = "update", "Update"
    DELETE = "delete", "Delete"
    ACTION = "action", "Action"
