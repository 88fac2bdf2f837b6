"""Studio forms for workspaces, members and tokens; the rules stay in the services they call."""
from django import forms

from workspaces.choices import Role
from workspaces.models import validate_workspace_name

TOKEN_DAYS = ((30, "30 days"), (90, "90 days"), (365, "1 year"))


class WorkspaceForm(forms.Form):
    # The service trusts its caller with the name's format, as the API serializer does through the model.
    name = forms.CharField(max_length=63, validators=[validate_workspace_name], help_text="A DNS label, e.g. team-a.")
    display_name = forms.CharField(max_length=200, required=False)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.READER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, help_text="What the token is for, e.g. laptop CLI.")
    expires_in_days = forms.TypedChoiceField(choices=TOKEN_DAYS, coerce=int, initial=90)


class UserForm(forms.Form):
    username = forms.CharField(max_length=150)
    email = forms.CharField(max_length=254, required=False)


class SetPasswordForm(forms.Form):
    password = forms.CharField(widget=forms.PasswordInput, strip=False)
    password_again = forms.CharField(widget=forms.PasswordInput, strip=False)

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("password") and cleaned.get("password") != cleaned.get("password_again"):
            self.add_error("password_again", "The two passwords differ.")
        return cleaned
